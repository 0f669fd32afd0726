//! Snapshots: a world written to bytes and read back with every handle, on any backend.
//!
//! A [`SnapshotSchema`] names the component and resource types a snapshot holds (by a stable name, not the Rust
//! type path). [`SnapshotSchema::save`] writes the allocator's whole state (every index's generation, the free
//! list in order, retired indices, capacity), then one column per component type (entity indices ascending, and
//! the values in that order), then the resources. Loading rebuilds the allocator first, so every handle comes back
//! with its index and generation: a handle stored inside a component still names the same entity, a stale one
//! stays stale, and the next spawn takes the same index the saved world would have given.
//!
//! ```text
//!  binary file:  "SWARMSNP" | version u32 | payload length u64 | checksum u64 | payload (postcard)
//!  payload:      saved_on | allocator | command totals | columns [name, entities, values] | resources [name, value]
//!                | changes [ticks, systems' last runs, tracked types' stamps]   (version 2; version 1 files load)
//! ```
//!
//! Two encodings of one payload: compact binary through [postcard](https://docs.rs/postcard) (a stable, documented
//! wire format with variable-length integers; column indices are stored as gaps, mostly one byte each), and JSON
//! for reading by eye (`{"format": "swarm snapshot", "version": 2, "snapshot": {...}}`, absolute indices, handles
//! as `"12v3"`). Loading tells them apart by the first bytes. Columns and resources are encoded one by one (a
//! blob per column in binary, a JSON value in JSON), so a schema needs no code per format.
//!
//! Loading never touches the world it loads into until everything has been read and checked: the new allocator,
//! pools and resources are built aside, and swapped in only on success. A truncated file, a wrong magic, a newer
//! version, a failed checksum, an undecodable column, an unknown component or resource name, an index out of
//! range or a handle the saved allocator never handed out each give a [`SnapshotError`] that names the problem.
//!
//! ```
//! use swarm::ecs::{Backend, Format, SnapshotSchema, World};
//! #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
//! struct Pos(f32, f32);
//!
//! let schema = SnapshotSchema::new().component::<Pos>("Pos");
//! let mut world = World::new();
//! let a = world.spawn((Pos(1.0, 2.0),)).unwrap();
//! let gone = world.spawn((Pos(0.0, 0.0),)).unwrap();
//! world.despawn(gone).unwrap();
//! let bytes = schema.save(&world, Format::Binary).unwrap();
//!
//! let loaded = schema.load(&bytes, Some(Backend::Archetype)).unwrap();
//! assert_eq!(loaded.get::<Pos>(a), Some(&Pos(1.0, 2.0))); // the same handle
//! assert!(!loaded.is_alive(gone)); // stale stays stale
//! assert!(schema.load(&bytes[..bytes.len() - 1], None).is_err()); // truncated: refused, with the reason
//! ```

use super::change::{Changes, SavedChanges};
use super::commands::CommandTotals;
use super::entity::{AllocatorState, Entities, Entity};
use super::hierarchy::{Children, Parent};
use super::holders::HoldsEntities;
use super::pipeline::Mode;
use super::storage::Backend;
use super::world::World;
use crate::ecs::{Component, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::any::TypeId;
use std::fmt;

/// The first 8 bytes of a binary snapshot.
pub const MAGIC: [u8; 8] = *b"SWARMSNP";
/// The format version this build writes, and the newest it reads.
pub const VERSION: u32 = 2;
/// The `format` field of a JSON snapshot.
pub const JSON_FORMAT: &str = "swarm snapshot";
/// Bytes before a binary snapshot's payload: magic, version, payload length, checksum.
pub const HEADER_LEN: usize = 8 + 4 + 8 + 8;

/// How a snapshot is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Compact binary (postcard) behind a header with magic, version, length and checksum.
    Binary,
    /// Pretty-printed JSON, for reading by eye.
    Json,
}

impl Format {
    /// The format a file name asks for: `.json` is JSON, anything else binary.
    pub fn for_path(path: &std::path::Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Binary,
        }
    }
}

/// Why a snapshot could not be written or read. Reading never changes the world it was to load into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    /// The bytes are not a snapshot (neither the binary magic nor a JSON snapshot).
    NotASnapshot {
        /// What the first bytes were instead.
        found: String,
    },
    /// The file ends early.
    Truncated {
        /// Bytes the header promised (or the header's own length).
        expected: u64,
        /// Bytes there are.
        found: u64,
    },
    /// Written by a newer version of the format than this build reads.
    NewerVersion {
        /// The file's version.
        found: u32,
    },
    /// The payload does not decode, or fails its checksum: the file was damaged or edited badly.
    Corrupt(String),
    /// A column or resource name this schema does not know.
    Unknown {
        /// "component" or "resource".
        kind: &'static str,
        /// The name in the file.
        name: String,
        /// The names the schema knows.
        known: String,
    },
    /// A resource the schema saves is missing from the file (or from the world being saved).
    MissingResource(&'static str),
    /// An entity index or handle in the file that the saved allocator cannot account for.
    BadEntity(String),
    /// The world has commands recorded and not applied: reserved handles belong to no saved entity.
    PendingCommands,
    /// The hierarchy in the file is broken: a cycle, a parent that is not alive, a child listed twice, or a
    /// parent and a child that disagree.
    Hierarchy(String),
    /// A value that decodes but is outside what the schema accepts (a setting past its limit, say): see
    /// [`SnapshotSchema::resource_checked`] and [`SnapshotSchema::check`].
    OutOfRange {
        /// The resource, or the name given to the world's check.
        name: &'static str,
        /// What is out of range, and the limit.
        why: String,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::NotASnapshot { found } => {
                write!(f, "not a swarm snapshot: it starts with {found}, not the magic \"SWARMSNP\" or JSON")
            }
            SnapshotError::Truncated { expected, found } => {
                write!(f, "truncated snapshot: {found} bytes where the header promises {expected}")
            }
            SnapshotError::NewerVersion { found } => write!(
                f,
                "snapshot format version {found} is newer than this build reads (up to {VERSION}); use a newer swarm"
            ),
            SnapshotError::Corrupt(why) => write!(f, "corrupt snapshot: {why}"),
            SnapshotError::Unknown { kind, name, known } => {
                write!(f, "unknown {kind} `{name}` in the snapshot (this build knows: {known})")
            }
            SnapshotError::MissingResource(name) => write!(f, "the snapshot has no `{name}` resource"),
            SnapshotError::BadEntity(why) => write!(f, "bad entity in the snapshot: {why}"),
            SnapshotError::PendingCommands => {
                write!(f, "the world has commands recorded and not applied; apply or discard them before saving")
            }
            SnapshotError::OutOfRange { name, why } => write!(f, "the snapshot's {name}: {why}"),
            SnapshotError::Hierarchy(why) => write!(f, "broken hierarchy in the snapshot: {why}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// One way of encoding values: the binary blob or a JSON value.
trait Codec: 'static {
    type Value: Serialize + DeserializeOwned;
    fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self::Value, String>;
    fn decode<T: DeserializeOwned>(value: Self::Value) -> Result<T, String>;
    /// One component type's entity indices, ascending, and its values encoded as a sequence in that order.
    fn save_column<T: Serialize + Component>(world: &World) -> Result<(Vec<u32>, Self::Value), String>;
    fn column(entry: &ComponentEntry) -> &ColumnFns<Self>
    where
        Self: Sized;
    fn resource(entry: &ResourceEntry) -> &ResourceFns<Self>
    where
        Self: Sized;
}

struct Postcard;
struct Json;

impl Codec for Postcard {
    type Value = serde_bytes::ByteBuf;
    fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self::Value, String> {
        postcard::to_allocvec(value).map(serde_bytes::ByteBuf::from).map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(value: Self::Value) -> Result<T, String> {
        match postcard::take_from_bytes::<T>(&value) {
            Ok((value, [])) => Ok(value),
            Ok((_, rest)) => Err(format!("{} bytes left over after the values", rest.len())),
            Err(error) => Err(error.to_string()),
        }
    }
    /// Each value is encoded as the query meets it (no lookup per entity, which costs a hash probe or a tree walk
    /// on some backends), with its byte range noted by entity index; then the ranges are joined in index order
    /// (a walk over the indices, not a sort). A postcard sequence is its length then its elements, so the join is
    /// exactly what encoding the sorted values would give.
    fn save_column<T: Serialize + Component>(world: &World) -> Result<(Vec<u32>, Self::Value), String> {
        const ABSENT: (u32, u32) = (u32::MAX, 0);
        let mut ranges = vec![ABSENT; world.entities().index_bound() as usize];
        let mut encoded = Vec::new();
        let mut failed = None;
        let mut count = 0usize;
        world.query_ref::<(&T,)>().for_each(|e, (value,)| {
            let start = encoded.len() as u32;
            match postcard::to_extend(value, std::mem::take(&mut encoded)) {
                Ok(bytes) => encoded = bytes,
                Err(error) => failed = Some(error.to_string()),
            }
            ranges[e.index() as usize] = (start, encoded.len() as u32);
            count += 1;
        });
        if let Some(error) = failed {
            return Err(error);
        }
        let mut indices = Vec::with_capacity(count);
        let mut out = postcard::to_allocvec(&count).map_err(|e| e.to_string())?;
        out.reserve(encoded.len());
        for (index, &(start, end)) in ranges.iter().enumerate() {
            if (start, end) != ABSENT {
                indices.push(index as u32);
                out.extend_from_slice(&encoded[start as usize..end as usize]);
            }
        }
        Ok((indices, serde_bytes::ByteBuf::from(out)))
    }
    fn column(entry: &ComponentEntry) -> &ColumnFns<Self> {
        &entry.binary
    }
    fn resource(entry: &ResourceEntry) -> &ResourceFns<Self> {
        &entry.binary
    }
}

impl Codec for Json {
    type Value = serde_json::Value;
    fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self::Value, String> {
        serde_json::to_value(value).map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(value: Self::Value) -> Result<T, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }
    fn save_column<T: Serialize + Component>(world: &World) -> Result<(Vec<u32>, Self::Value), String> {
        let mut handles: Vec<Entity> = Vec::new();
        world.query_ref::<(&T,)>().for_each(|e, _| handles.push(e));
        // Index order whatever the backend's order: the same world saves to the same file on every backend.
        handles.sort_unstable();
        let indices = handles.iter().map(|e| e.index()).collect();
        let values: Vec<&T> = handles.iter().map(|&e| world.get::<T>(e).expect("the query just saw it")).collect();
        Ok((indices, Self::encode(&values)?))
    }
    fn column(entry: &ComponentEntry) -> &ColumnFns<Self> {
        &entry.json
    }
    fn resource(entry: &ResourceEntry) -> &ResourceFns<Self> {
        &entry.json
    }
}

type SaveColumn<C> = Box<dyn Fn(&World) -> Result<(Vec<u32>, <C as Codec>::Value), SnapshotError>>;
type LoadColumn<C> = Box<dyn Fn(&mut World, &[u32], <C as Codec>::Value) -> Result<(), SnapshotError>>;

/// Checks the handles a value holds; the first one the allocator never handed out is the error.
type CheckHandles<T> = fn(&T, &Entities) -> Result<(), Entity>;

struct ColumnFns<C: Codec> {
    save: SaveColumn<C>,
    load: LoadColumn<C>,
}

type SaveResource<C> = Box<dyn Fn(&World) -> Result<<C as Codec>::Value, SnapshotError>>;
type LoadResource<C> = Box<dyn Fn(&mut World, <C as Codec>::Value) -> Result<(), SnapshotError>>;

struct ResourceFns<C: Codec> {
    save: SaveResource<C>,
    load: LoadResource<C>,
}

struct ComponentEntry {
    name: &'static str,
    type_id: TypeId,
    binary: ColumnFns<Postcard>,
    json: ColumnFns<Json>,
}

struct ResourceEntry {
    name: &'static str,
    binary: ResourceFns<Postcard>,
    json: ResourceFns<Json>,
    /// What a file without it loads (a resource added after files were written); `None`: it is required.
    missing: Option<Missing>,
}

/// What [`SnapshotSchema::resource_or`] puts in a world whose file lacks the resource.
type Missing = Box<dyn Fn(&mut World)>;

/// Ascending entity indices: as gaps from the previous one in binary formats (mostly one byte each), absolute in
/// human-readable ones.
struct Indices(Vec<u32>);

impl Serialize for Indices {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            return self.0.serialize(serializer);
        }
        let mut last = 0u32;
        serializer.collect_seq(self.0.iter().map(|&i| {
            let gap = i.wrapping_sub(last);
            last = i;
            gap
        }))
    }
}

impl<'de> Deserialize<'de> for Indices {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let human = deserializer.is_human_readable();
        let mut values = Vec::<u32>::deserialize(deserializer)?;
        if !human {
            let mut last = 0u32;
            for value in &mut values {
                last = last.wrapping_add(*value);
                *value = last;
            }
        }
        Ok(Indices(values))
    }
}

#[derive(Serialize, Deserialize)]
struct Column<V> {
    name: String,
    entities: Indices,
    values: V,
}

#[derive(Serialize, Deserialize)]
struct Named<V> {
    name: String,
    value: V,
}

#[derive(Serialize, Deserialize)]
struct Payload<V> {
    /// The backend the world was on (loading defaults to it).
    saved_on: String,
    allocator: AllocatorState,
    commands: CommandTotals,
    components: Vec<Column<V>>,
    resources: Vec<Named<V>>,
    /// Change detection's ticks, the systems' last runs and the tracked types' stamps (since version 2).
    #[serde(default)]
    changes: SavedChanges,
}

/// The payload of format version 1: no change state.
#[derive(Deserialize)]
struct PayloadV1<V> {
    saved_on: String,
    allocator: AllocatorState,
    commands: CommandTotals,
    components: Vec<Column<V>>,
    resources: Vec<Named<V>>,
}

impl<V> From<PayloadV1<V>> for Payload<V> {
    fn from(old: PayloadV1<V>) -> Self {
        let PayloadV1 { saved_on, allocator, commands, components, resources } = old;
        Payload { saved_on, allocator, commands, components, resources, changes: SavedChanges::default() }
    }
}

#[derive(Serialize, Deserialize)]
struct JsonFile<V> {
    format: String,
    version: u32,
    snapshot: Payload<V>,
}

/// What a load found, besides the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadInfo {
    /// The backend the snapshot was saved on.
    pub saved_on: Backend,
    /// The encoding it was read from.
    pub format: Format,
    /// Live entities loaded.
    pub entities: u32,
}

/// The component and resource types a snapshot holds, each under a stable name. Types the schema does not name
/// are not saved (a loaded world lacks them); names in a file the schema does not know are refused.
#[derive(Default)]
pub struct SnapshotSchema {
    components: Vec<ComponentEntry>,
    resources: Vec<ResourceEntry>,
    checks: Vec<(&'static str, WorldCheck)>,
}

/// A check of a loaded resource (see [`SnapshotSchema::resource_checked`]).
type ResourceCheck<R> = fn(&R) -> Result<(), String>;

/// A check of the whole loaded world (see [`SnapshotSchema::check`]).
type WorldCheck = fn(&World) -> Result<(), String>;

impl fmt::Debug for SnapshotSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotSchema")
            .field("components", &self.components.iter().map(|c| c.name).collect::<Vec<_>>())
            .field("resources", &self.resources.iter().map(|r| r.name).collect::<Vec<_>>())
            .field("checks", &self.checks.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .finish()
    }
}

/// Checks a column's indices (ascending, alive) and pairs them with their handles.
fn column_entities(entities: &Entities, name: &str, indices: &[u32]) -> Result<Vec<Entity>, SnapshotError> {
    let mut handles = Vec::with_capacity(indices.len());
    let mut last = None;
    for &index in indices {
        if last.is_some_and(|last| index <= last) {
            return Err(SnapshotError::BadEntity(format!(
                "column `{name}` lists entity index {index} out of order (indices must ascend)"
            )));
        }
        last = Some(index);
        match entities.alive_at(index) {
            Some(entity) => handles.push(entity),
            None if index >= entities.index_bound() => {
                return Err(SnapshotError::BadEntity(format!(
                    "column `{name}` names entity index {index}, beyond the {} indices the allocator has used",
                    entities.index_bound()
                )))
            }
            None => {
                return Err(SnapshotError::BadEntity(format!(
                    "column `{name}` names entity index {index}, which is not alive"
                )))
            }
        }
    }
    Ok(handles)
}

/// A column's handles (see [`column_entities`]), once its `values` count matches its indices.
fn paired_entities(
    entities: &Entities,
    name: &str,
    indices: &[u32],
    values: usize,
) -> Result<Vec<Entity>, SnapshotError> {
    if values != indices.len() {
        return Err(SnapshotError::Corrupt(format!(
            "column `{name}` has {values} values for {} entities",
            indices.len()
        )));
    }
    column_entities(entities, name, indices)
}

fn load_column<T: DeserializeOwned + Component, C: Codec>(
    world: &mut World,
    name: &'static str,
    indices: &[u32],
    values: C::Value,
    check: Option<CheckHandles<T>>,
) -> Result<(), SnapshotError> {
    let (handles, values) = read_column::<T, C>(world.entities(), name, indices, values, check)?;
    let skipped = world.insert_many(handles.into_iter().zip(values));
    debug_assert_eq!(skipped, 0, "checked alive above");
    Ok(())
}

/// A column's live handles and its decoded values, in order, each value's handles checked by `check`.
fn read_column<T: DeserializeOwned, C: Codec>(
    entities: &Entities,
    name: &str,
    indices: &[u32],
    values: C::Value,
    check: Option<CheckHandles<T>>,
) -> Result<(Vec<Entity>, Vec<T>), SnapshotError> {
    let values: Vec<T> =
        C::decode(values).map_err(|why| SnapshotError::Corrupt(format!("column `{name}` does not decode: {why}")))?;
    let handles = paired_entities(entities, name, indices, values.len())?;
    if let Some(check) = check {
        for (value, entity) in values.iter().zip(&handles) {
            if let Err(bad) = check(value, entities) {
                return Err(SnapshotError::BadEntity(format!(
                    "`{name}` of {entity:?} holds handle {bad:?}, which the saved world never handed out"
                )));
            }
        }
    }
    Ok((handles, values))
}

/// A resource's save and load in codec `C`: `encode` turns the world's resource into a value, `decode` a value
/// into the resource (seeing the loaded world), each failing with a reason that the error names with the resource.
fn resource_fns<R: Resource, C: Codec>(
    name: &'static str,
    encode: impl Fn(&R, &World) -> Result<C::Value, String> + 'static,
    decode: impl Fn(C::Value, &World) -> Result<R, String> + 'static,
    check: Option<ResourceCheck<R>>,
) -> ResourceFns<C> {
    ResourceFns {
        save: Box::new(move |world| {
            let resource = world.get_resource::<R>().ok_or(SnapshotError::MissingResource(name))?;
            encode(resource, world)
                .map_err(|why| SnapshotError::Corrupt(format!("resource `{name}` does not encode: {why}")))
        }),
        load: Box::new(move |world, value| {
            let resource = decode(value, world)
                .map_err(|why| SnapshotError::Corrupt(format!("resource `{name}` does not load: {why}")))?;
            if let Some(check) = check {
                check(&resource).map_err(|why| SnapshotError::OutOfRange { name, why })?;
            }
            world.insert_resource(resource);
            Ok(())
        }),
    }
}

fn check_handles<T: HoldsEntities>(value: &T, entities: &Entities) -> Result<(), Entity> {
    let mut bad = None;
    value.visit_entities(&mut |e| {
        if bad.is_none() && e != Entity::DEAD && !entities.was_handed_out(e) {
            bad = Some(e);
        }
    });
    bad.map_or(Ok(()), Err)
}

impl SnapshotSchema {
    /// A schema that saves nothing but the allocator (every handle, no values).
    pub fn new() -> Self {
        Self::default()
    }

    fn push_component<T: Serialize + DeserializeOwned + Component>(
        mut self,
        name: &'static str,
        check: Option<CheckHandles<T>>,
    ) -> Self {
        assert!(!name.starts_with('@'), "component name `{name}`: names starting with `@` are the snapshot's own");
        assert!(
            !self.components.iter().any(|c| c.name == name || c.type_id == TypeId::of::<T>()),
            "component `{name}` ({}) is in the schema twice",
            std::any::type_name::<T>()
        );
        fn fns<T: Serialize + DeserializeOwned + Component, C: Codec>(
            name: &'static str,
            check: Option<CheckHandles<T>>,
        ) -> ColumnFns<C> {
            ColumnFns {
                save: Box::new(move |world| {
                    C::save_column::<T>(world)
                        .map_err(|why| SnapshotError::Corrupt(format!("column `{name}` does not encode: {why}")))
                }),
                load: Box::new(move |world, indices, values| load_column::<T, C>(world, name, indices, values, check)),
            }
        }
        self.components.push(ComponentEntry {
            name,
            type_id: TypeId::of::<T>(),
            binary: fns::<T, Postcard>(name, check),
            json: fns::<T, Json>(name, check),
        });
        self
    }

    /// Saves component `T` under `name` (stable across versions of the program: not the Rust type path).
    ///
    /// # Panics
    /// If the name or the type is in the schema already.
    pub fn component<T: Serialize + DeserializeOwned + Component>(self, name: &'static str) -> Self {
        self.push_component::<T>(name, None)
    }

    /// Like [`SnapshotSchema::component`], for a type that holds entity handles: loading checks each one names an
    /// entity the saved allocator handed out (alive, or stale) and refuses the file otherwise.
    pub fn component_with_entities<T: Serialize + DeserializeOwned + HoldsEntities + Component>(
        self,
        name: &'static str,
    ) -> Self {
        self.push_component::<T>(name, Some(check_handles::<T>))
    }

    /// Saves resource `R` under `name`. Loading replaces the resource in the world it loads into.
    pub fn resource<R: Serialize + DeserializeOwned + Resource>(self, name: &'static str) -> Self {
        self.push_checked_resource::<R>(name, None)
    }

    /// Saves resource `R` under `name`, as [`SnapshotSchema::resource`] does, and checks each loaded value with
    /// `check` before anything else is loaded from it: a refusal fails the load with
    /// [`SnapshotError::OutOfRange`], naming the resource and `check`'s reason. For values from outside that
    /// must keep within limits (settings that size buffers or loops, say).
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use swarm::ecs::{Format, SnapshotError, SnapshotSchema, World};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Speed(f32);
    /// let schema = SnapshotSchema::new().resource_checked::<Speed>("speed", |s| {
    ///     if s.0.is_finite() { Ok(()) } else { Err(format!("{} is not a finite speed", s.0)) }
    /// });
    /// let mut world = World::new();
    /// world.insert_resource(Speed(f32::INFINITY));
    /// let bytes = schema.save(&world, Format::Binary).unwrap();
    /// let error = schema.load(&bytes, None).err().unwrap();
    /// assert!(matches!(error, SnapshotError::OutOfRange { name: "speed", .. }), "{error}");
    /// ```
    pub fn resource_checked<R: Serialize + DeserializeOwned + Resource>(
        self,
        name: &'static str,
        check: fn(&R) -> Result<(), String>,
    ) -> Self {
        self.push_checked_resource::<R>(name, Some(check))
    }

    fn push_checked_resource<R: Serialize + DeserializeOwned + Component>(
        self,
        name: &'static str,
        check: Option<ResourceCheck<R>>,
    ) -> Self {
        fn fns<R: Serialize + DeserializeOwned + Component, C: Codec>(
            name: &'static str,
            check: Option<ResourceCheck<R>>,
        ) -> ResourceFns<C> {
            resource_fns::<R, C>(name, |resource, _| C::encode(resource), |value, _| C::decode(value), check)
        }
        self.push_resource(ResourceEntry {
            name,
            binary: fns::<R, Postcard>(name, check),
            json: fns::<R, Json>(name, check),
            missing: None,
        })
    }

    /// Saves resource `R` under `name`, as [`SnapshotSchema::resource`] does; a file without it (written before
    /// the resource existed) loads with the value `missing` makes, where [`SnapshotSchema::resource`] refuses it.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use swarm::ecs::{Format, SnapshotSchema, World};
    ///
    /// #[derive(Serialize, Deserialize, PartialEq, Debug)]
    /// struct Round(u32);
    /// let old = SnapshotSchema::new().save(&World::new(), Format::Binary).unwrap();
    /// let world = SnapshotSchema::new().resource_or("round", || Round(1)).load(&old, None).unwrap();
    /// assert_eq!(world.resource::<Round>(), &Round(1));
    /// ```
    pub fn resource_or<R: Serialize + DeserializeOwned + Resource>(
        self,
        name: &'static str,
        missing: fn() -> R,
    ) -> Self {
        let mut schema = self.push_checked_resource::<R>(name, None);
        let entry = schema.resources.last_mut().expect("just pushed");
        entry.missing = Some(Box::new(move |world: &mut World| {
            world.insert_resource(missing());
        }));
        schema
    }

    /// Checks the whole loaded world with `check` (after its entities, components and resources are in, before the
    /// load succeeds); a refusal fails the load with [`SnapshotError::OutOfRange`] under `name`. For limits no
    /// single resource holds, such as the allocator's capacity.
    pub fn check(mut self, name: &'static str, check: fn(&World) -> Result<(), String>) -> Self {
        self.checks.push((name, check));
        self
    }

    /// Saves resource `R` as the value `save` makes of it (seeing the world), and rebuilds it with `load`, which
    /// sees the loaded world (its entities, components and the resources named before this one) and may refuse
    /// with a reason. For a resource that is derived data (a spatial index, say): save what cannot be derived,
    /// rebuild the rest.
    pub fn resource_with<R: Resource, S: Serialize + DeserializeOwned + Component>(
        self,
        name: &'static str,
        save: fn(&R, &World) -> S,
        load: fn(S, &World) -> Result<R, String>,
    ) -> Self {
        fn fns<R: Resource, S: Serialize + DeserializeOwned + Component, C: Codec>(
            name: &'static str,
            save: fn(&R, &World) -> S,
            load: fn(S, &World) -> Result<R, String>,
        ) -> ResourceFns<C> {
            resource_fns::<R, C>(
                name,
                move |resource, world| C::encode(&save(resource, world)),
                move |value, world| load(C::decode::<S>(value)?, world),
                None,
            )
        }
        self.push_resource(ResourceEntry {
            name,
            binary: fns::<R, S, Postcard>(name, save, load),
            json: fns::<R, S, Json>(name, save, load),
            missing: None,
        })
    }

    fn push_resource(mut self, entry: ResourceEntry) -> Self {
        assert!(
            !self.resources.iter().any(|r| r.name == entry.name),
            "resource `{}` is in the schema twice",
            entry.name
        );
        self.resources.push(entry);
        self
    }

    fn payload<C: Codec>(&self, world: &World) -> Result<Payload<C::Value>, SnapshotError> {
        let allocator = world.entities().state().ok_or(SnapshotError::PendingCommands)?;
        if world.has_pending_commands() {
            return Err(SnapshotError::PendingCommands);
        }
        let mut components = Vec::with_capacity(self.components.len());
        for entry in &self.components {
            let (indices, values) = (C::column(entry).save)(world)?;
            components.push(Column { name: entry.name.to_string(), entities: Indices(indices), values });
        }
        // The hierarchy goes with every schema (a world's tree is never lost), when there is one.
        if world.count_of::<Children>() > 0 {
            let encode = |why| SnapshotError::Corrupt(format!("the hierarchy does not encode: {why}"));
            let (indices, values) = C::save_column::<Parent>(world).map_err(encode)?;
            components.push(Column { name: PARENT_COLUMN.into(), entities: Indices(indices), values });
            let (indices, values) = C::save_column::<Children>(world).map_err(encode)?;
            components.push(Column { name: CHILDREN_COLUMN.into(), entities: Indices(indices), values });
        }
        let mut resources = Vec::with_capacity(self.resources.len());
        for entry in &self.resources {
            resources.push(Named { name: entry.name.to_string(), value: (C::resource(entry).save)(world)? });
        }
        let changes = world.changes().save(world, |id| {
            let type_id = world.components.info(id).type_id;
            self.components.iter().find(|entry| entry.type_id == type_id).map(|entry| entry.name.to_string())
        });
        Ok(Payload {
            saved_on: world.backend().name().to_string(),
            allocator,
            commands: world.command_totals(),
            components,
            resources,
            changes,
        })
    }

    /// Writes `world` as a snapshot in `format`. Refused while commands are recorded and not applied, or when a
    /// resource of the schema is missing from the world.
    pub fn save(&self, world: &World, format: Format) -> Result<Vec<u8>, SnapshotError> {
        match format {
            Format::Binary => {
                let payload = self.payload::<Postcard>(world)?;
                // The payload goes straight after room for the header, which is filled in once its length and
                // checksum are known (no second copy of a file of megabytes).
                let mut bytes = postcard::to_extend(&payload, vec![0u8; HEADER_LEN])
                    .map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
                let (length, sum) = ((bytes.len() - HEADER_LEN) as u64, checksum(&bytes[HEADER_LEN..]));
                bytes[..8].copy_from_slice(&MAGIC);
                bytes[8..12].copy_from_slice(&VERSION.to_le_bytes());
                bytes[12..20].copy_from_slice(&length.to_le_bytes());
                bytes[20..28].copy_from_slice(&sum.to_le_bytes());
                Ok(bytes)
            }
            Format::Json => {
                let file = JsonFile {
                    format: JSON_FORMAT.to_string(),
                    version: VERSION,
                    snapshot: self.payload::<Json>(world)?,
                };
                let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
                bytes.push(b'\n');
                Ok(bytes)
            }
        }
    }

    /// Reads a snapshot into a new world on `backend` (default: the backend it was saved on).
    pub fn load(&self, bytes: &[u8], backend: Option<Backend>) -> Result<World, SnapshotError> {
        let mut world = World::new();
        self.load_into(&mut world, bytes, backend)?;
        Ok(world)
    }

    /// Reads a snapshot into `world`: its entities, components and the schema's resources are replaced; its other
    /// resources stay. Everything is built aside and swapped in only on success: on an error `world` is untouched.
    /// Commands recorded in `world` and not applied are discarded on success (they named the old entities).
    pub fn load_into(
        &self,
        world: &mut World,
        bytes: &[u8],
        backend: Option<Backend>,
    ) -> Result<LoadInfo, SnapshotError> {
        let (staging, saved_on, format) = match detect(bytes)? {
            Format::Binary => {
                let body = binary_body(bytes)?;
                // Version 1 had no change state: nothing was tracked.
                let decoded = match bytes[8] {
                    1 => postcard::take_from_bytes::<PayloadV1<serde_bytes::ByteBuf>>(body)
                        .map(|(payload, rest)| (payload.into(), rest)),
                    _ => postcard::take_from_bytes(body),
                };
                let payload: Payload<serde_bytes::ByteBuf> = match decoded {
                    Ok((payload, [])) => payload,
                    Ok((_, rest)) => {
                        return Err(SnapshotError::Corrupt(format!("{} bytes after the payload", rest.len())))
                    }
                    Err(error) => return Err(SnapshotError::Corrupt(format!("the payload does not decode: {error}"))),
                };
                let (world, saved_on) = self.build::<Postcard>(payload)?;
                (world, saved_on, Format::Binary)
            }
            Format::Json => {
                let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
                    if e.is_eof() {
                        SnapshotError::Corrupt(format!("the JSON ends early (truncated?): {e}"))
                    } else {
                        SnapshotError::Corrupt(format!("not valid JSON: {e}"))
                    }
                })?;
                let format = value.get("format").and_then(|f| f.as_str());
                if format != Some(JSON_FORMAT) {
                    return Err(SnapshotError::NotASnapshot {
                        found: format!(
                            "JSON whose \"format\" is {:?}, not {JSON_FORMAT:?}",
                            format.unwrap_or("missing")
                        ),
                    });
                }
                match value.get("version").and_then(|v| v.as_u64()) {
                    Some(v) if v > VERSION as u64 => {
                        return Err(SnapshotError::NewerVersion { found: u32::try_from(v).unwrap_or(u32::MAX) })
                    }
                    Some(_) => {}
                    None => return Err(SnapshotError::Corrupt("the JSON has no numeric \"version\"".into())),
                }
                let file: JsonFile<serde_json::Value> = serde_json::from_value(value)
                    .map_err(|e| SnapshotError::Corrupt(format!("the JSON snapshot does not decode: {e}")))?;
                let (world, saved_on) = self.build::<Json>(file.snapshot)?;
                (world, saved_on, Format::Json)
            }
        };
        let mut staging = staging;
        staging.set_backend(backend.unwrap_or(saved_on));
        let entities = staging.len();
        world.replace_contents(staging);
        Ok(LoadInfo { saved_on, format, entities })
    }

    /// Builds the loaded world (on the sparse-set backend) from a decoded payload, checking every name and index.
    fn build<C: Codec>(&self, payload: Payload<C::Value>) -> Result<(World, Backend), SnapshotError> {
        let saved_on: Backend = payload
            .saved_on
            .parse()
            .map_err(|e| SnapshotError::Corrupt(format!("the backend it was saved on: {e}")))?;
        let entities = Entities::from_state(&payload.allocator)
            .map_err(|why| SnapshotError::BadEntity(format!("the allocator's state is impossible: {why}")))?;
        let mut world = World::from_entities(entities);
        world.set_command_totals(payload.commands);
        let known = |names: &mut dyn Iterator<Item = &'static str>| names.collect::<Vec<_>>().join(", ");
        let mut seen = vec![false; self.components.len()];
        let mut tree_seen = [false; 2];
        for column in payload.components {
            if let Some(k) = [PARENT_COLUMN, CHILDREN_COLUMN].iter().position(|&name| name == column.name) {
                if std::mem::replace(&mut tree_seen[k], true) {
                    return Err(SnapshotError::Corrupt(format!("column `{}` appears twice", column.name)));
                }
                load_tree_column::<C>(&mut world, k == 0, &column.entities.0, column.values)?;
                continue;
            }
            let Some(at) = self.components.iter().position(|c| c.name == column.name) else {
                return Err(SnapshotError::Unknown {
                    kind: "component",
                    name: column.name,
                    known: known(&mut self.components.iter().map(|c| c.name)),
                });
            };
            if std::mem::replace(&mut seen[at], true) {
                return Err(SnapshotError::Corrupt(format!("column `{}` appears twice", column.name)));
            }
            (C::column(&self.components[at]).load)(&mut world, &column.entities.0, column.values)?;
        }
        let mut values: Vec<Option<C::Value>> = self.resources.iter().map(|_| None).collect();
        for named in payload.resources {
            let Some(at) = self.resources.iter().position(|r| r.name == named.name) else {
                return Err(SnapshotError::Unknown {
                    kind: "resource",
                    name: named.name,
                    known: known(&mut self.resources.iter().map(|r| r.name)),
                });
            };
            if values[at].replace(named.value).is_some() {
                return Err(SnapshotError::Corrupt(format!("resource `{}` appears twice", named.name)));
            }
        }
        if tree_seen != [false; 2] {
            world.check_tree().map_err(SnapshotError::Hierarchy)?;
        }
        // In schema order, so a resource rebuilt from others sees them.
        for (entry, value) in self.resources.iter().zip(values) {
            match (value, &entry.missing) {
                (Some(value), _) => (C::resource(entry).load)(&mut world, value)?,
                (None, Some(missing)) => missing(&mut world),
                (None, None) => return Err(SnapshotError::MissingResource(entry.name)),
            }
        }
        for &(name, check) in &self.checks {
            check(&world).map_err(|why| SnapshotError::OutOfRange { name, why })?;
        }
        // Last, silently: the load itself is no change.
        let bound = world.entities().index_bound();
        let id = |name: &str| {
            let entry = self.components.iter().find(|entry| entry.name == name)?;
            world.components.id_of(entry.type_id)
        };
        let mut changes = Changes::load(payload.changes, id, bound).map_err(SnapshotError::Corrupt)?;
        let live: Vec<u32> = world.entities().iter().map(|entity| entity.index()).collect();
        let holds = |id, index| world.storage.contains(id, index);
        let name = |id| {
            let entry = self.components.iter().find(|entry| world.components.id_of(entry.type_id) == Some(id));
            entry.map_or_else(|| world.components.info(id).name.to_string(), |entry| entry.name.to_string())
        };
        changes.agree(&live, holds, name).map_err(SnapshotError::Corrupt)?;
        world.set_changes(changes);
        Ok((world, saved_on))
    }
}

/// The columns that hold the hierarchy, in every snapshot of a world that has one (names no schema can take:
/// they start with `@`).
const PARENT_COLUMN: &str = "@parent";
const CHILDREN_COLUMN: &str = "@children";

/// Loads the hierarchy's `@parent` column (`parents`) or `@children` column: every handle must be one the saved
/// allocator handed out; whether the two sides agree is checked once both are in.
fn load_tree_column<C: Codec>(
    world: &mut World,
    parents: bool,
    indices: &[u32],
    values: C::Value,
) -> Result<(), SnapshotError> {
    let tree = world.tree_ids();
    if parents {
        let check = Some(check_handles::<Entity> as CheckHandles<Entity>);
        let (handles, values) = read_column::<Entity, C>(world.entities(), PARENT_COLUMN, indices, values, check)?;
        for (entity, parent) in handles.into_iter().zip(values) {
            world.insert_value(tree.parent, entity, Parent::new(parent), Mode::Silent);
        }
    } else {
        let check = Some(check_handles::<Vec<Entity>> as CheckHandles<Vec<Entity>>);
        let (handles, lists) =
            read_column::<Vec<Entity>, C>(world.entities(), CHILDREN_COLUMN, indices, values, check)?;
        for (entity, list) in handles.into_iter().zip(lists) {
            world.insert_value(tree.children, entity, Children::new(list), Mode::Silent);
        }
    }
    Ok(())
}

/// Which encoding `bytes` are in, from the first bytes.
fn detect(bytes: &[u8]) -> Result<Format, SnapshotError> {
    if bytes.starts_with(&MAGIC) {
        return Ok(Format::Binary);
    }
    if !bytes.is_empty() && MAGIC.starts_with(bytes) {
        return Err(SnapshotError::Truncated { expected: HEADER_LEN as u64, found: bytes.len() as u64 });
    }
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return Ok(Format::Json);
    }
    let shown: String = bytes.iter().take(8).map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
    Err(SnapshotError::NotASnapshot {
        found: if bytes.is_empty() { "nothing (the file is empty)".into() } else { format!("{shown:?}") },
    })
}

/// The payload of a binary snapshot, after checking the header: version, length and checksum.
fn binary_body(bytes: &[u8]) -> Result<&[u8], SnapshotError> {
    if bytes.len() < HEADER_LEN {
        return Err(SnapshotError::Truncated { expected: HEADER_LEN as u64, found: bytes.len() as u64 });
    }
    let word = |at: usize, n: usize| bytes[at..at + n].iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64);
    let version = word(8, 4) as u32;
    if version > VERSION {
        return Err(SnapshotError::NewerVersion { found: version });
    }
    if version == 0 {
        return Err(SnapshotError::Corrupt("format version 0 does not exist".into()));
    }
    let length = word(12, 8);
    let body = &bytes[HEADER_LEN..];
    if (body.len() as u64) < length {
        return Err(SnapshotError::Truncated { expected: HEADER_LEN as u64 + length, found: bytes.len() as u64 });
    }
    if body.len() as u64 > length {
        return Err(SnapshotError::Corrupt(format!(
            "{} bytes after the end of the snapshot",
            body.len() as u64 - length
        )));
    }
    if checksum(body) != word(20, 8) {
        return Err(SnapshotError::Corrupt("the payload fails its checksum (the file was damaged)".into()));
    }
    Ok(body)
}

/// A 64-bit checksum of the payload: each 8-byte word goes through a multiply and a rotation, both bijective, so
/// changing any one word always changes the result; a final avalanche spreads it. Not cryptographic: it catches
/// damage, not tampering.
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K).rotate_left(29);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}
