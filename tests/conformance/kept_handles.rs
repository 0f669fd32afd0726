//! Deferred handles kept in values of the types registered as holding entities: after the apply they name the
//! spawned entities (or `Entity::DEAD`), wherever the value sits.

use crate::{world, Pos, Vel};
use swarm::ecs::{Backend, Entity, HoldsEntities, World};

/// Whom an entity follows: a registered holder, by hand.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Leader(Entity);
impl HoldsEntities for Leader {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        visit(self.0)
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        map(&mut self.0)
    }
}

/// Handles in a list, inside a component (derived: only the marked field holds handles).
#[derive(Debug, Clone, PartialEq, Default, HoldsEntities)]
struct Squad {
    #[entities]
    members: Vec<Entity>,
    size: usize,
}

/// The same shape, not registered: its handles stay as written.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Unregistered(Entity);

/// A resource holding the last spawn made in a loop.
#[derive(Debug, Default, PartialEq, HoldsEntities)]
struct Newest(#[entities] Option<Entity>);

fn holders(backend: Backend) -> World {
    let mut w = world(backend);
    w.register_entity_holder::<Leader>();
    w.register_entity_holder::<Squad>();
    w.register_entity_holder::<Newest>();
    w.insert_resource(Newest(None));
    for i in 0..40 {
        w.spawn((Pos(i as f32, 0.0), Squad::default())).unwrap();
    }
    w
}

/// Each row spawns a marker; the handle goes into a component by command and by `&mut`, into a list, into a
/// resource and into an unregistered type. After the apply every registered place names the marker.
fn kept_deferred_handles_become_the_spawned_entities(backend: Backend) {
    let mut w = holders(backend);
    let mut newest = None;
    w.query::<(&Pos, &mut Squad)>().for_each_with_commands(|e, (pos, squad), commands| {
        let marker = commands.spawn((Pos(pos.0, 1.0),)).unwrap();
        assert!(marker.is_deferred());
        commands.insert(e, Leader(marker));
        commands.insert(e, Unregistered(marker));
        squad.members.push(marker);
        squad.members.push(e);
        squad.size = squad.members.len();
        newest = Some(marker);
    });
    w.resource_mut::<Newest>().0 = newest;
    w.apply_commands();
    let mut rows = 0;
    w.query::<(&Pos, &Leader, &Squad, &Unregistered)>().for_each(|e, (pos, leader, squad, unregistered)| {
        rows += 1;
        assert!(!leader.0.is_deferred(), "{backend}");
        assert_eq!(pos.1, 0.0, "{backend}: the rows, not the markers");
        assert_eq!(
            squad.members,
            vec![leader.0, e],
            "{backend}: the list's deferred handle followed, the other stayed"
        );
        assert_eq!(squad.size, 2, "{backend}");
        assert!(unregistered.0.is_deferred(), "{backend}: an unregistered type keeps what was written");
    });
    assert_eq!(rows, 40, "{backend}");
    // Each leader is the marker spawned at its row's position.
    let leaders: Vec<(Entity, Entity)> = {
        let mut v = Vec::new();
        w.query::<&Leader>().for_each(|e, leader| v.push((e, leader.0)));
        v
    };
    for (e, leader) in leaders {
        let (at, marker_at) = (w.get::<Pos>(e).unwrap().0, w.get::<Pos>(leader).copied());
        assert_eq!(marker_at, Some(Pos(at, 1.0)), "{backend}");
    }
    let newest = w.resource::<Newest>().0.unwrap();
    assert!(w.is_alive(newest) && w.get::<Pos>(newest).unwrap().1 == 1.0, "{backend}");
    w.assert_invariants();
}

/// A discarded buffer's deferred handles, and a spawn the full world refused, become `Entity::DEAD`: never
/// another entity, even after later spawns take the same numbers.
fn refused_and_discarded_spawns_leave_dead_handles(backend: Backend) {
    let mut w = World::with_capacity(3);
    w.set_backend(backend);
    w.register_entity_holder::<Leader>();
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    // Discarded: the kept handle must not name the next buffer's first spawn.
    let mut kept = None;
    w.query::<&Pos>().for_each_with_commands(|_, _, commands| kept = Some(commands.spawn((Pos(9.0, 9.0),)).unwrap()));
    w.insert(a, Leader(kept.unwrap())).unwrap();
    w.discard_commands();
    assert_eq!(w.get::<Leader>(a), Some(&Leader(Entity::DEAD)), "{backend}");
    w.query::<&Pos>().for_each_with_commands(|_, _, commands| {
        commands.spawn((Pos(5.0, 5.0),)).unwrap();
    });
    w.apply_commands();
    assert_eq!(w.get::<Leader>(a), Some(&Leader(Entity::DEAD)), "{backend}");
    // Refused: the world holds 2 of 3; of four deferred spawns one fits.
    let mut made = Vec::new();
    w.query::<&Pos>().for_each_with_commands(|e, _, commands| {
        if e == a {
            for _ in 0..4 {
                made.push(commands.spawn((Pos(7.0, 7.0),)).unwrap());
            }
        }
    });
    w.insert(a, Leader(made[3])).unwrap();
    w.insert_resource(Newest(Some(made[0])));
    w.register_entity_holder::<Newest>();
    let stats = w.apply_commands();
    assert_eq!(stats.refused, 3, "{backend}: {stats:?}");
    assert_eq!(w.get::<Leader>(a), Some(&Leader(Entity::DEAD)), "{backend}");
    let first = w.resource::<Newest>().0.unwrap();
    assert_eq!(w.get::<Pos>(first), Some(&Pos(7.0, 7.0)), "{backend}: the spawn that fitted");
    assert!(!w.is_alive(Entity::DEAD) && w.get::<Pos>(Entity::DEAD).is_none());
    w.assert_invariants();
}

/// A snapshot whose value holds a deferred handle (a file edited by hand: a world with pending commands refuses to
/// save) loads with `Entity::DEAD` there: the number names a spawn of no buffer of the loading world.
fn a_loaded_deferred_handle_names_nothing(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    let schema = SnapshotSchema::new().component::<Pos>("pos").component::<Leader>("leader");
    let mut w = World::new();
    w.set_backend(backend);
    let a = w.spawn((Pos(1.0, 1.0),)).unwrap();
    let b = w.spawn((Pos(2.0, 2.0),)).unwrap();
    w.insert(a, Leader(b)).unwrap();
    let text = String::from_utf8(schema.save(&w, Format::Json).unwrap()).unwrap();
    assert_eq!(text.matches("\"1v1\"").count(), 1, "the leader's handle, once");
    let edited = text.replace("\"1v1\"", "\"4294967295v1\"");
    let mut loaded = World::new();
    loaded.register_entity_holder::<Leader>();
    schema.load_into(&mut loaded, edited.as_bytes(), Some(backend)).unwrap();
    assert_eq!(loaded.get::<Leader>(a), Some(&Leader(Entity::DEAD)), "{backend}");
    // The loading world's first deferred spawn takes number 1: the old handle does not name it.
    loaded.query::<&Pos>().for_each_with_commands(|_, _, commands| {
        commands.spawn((Pos(3.0, 3.0),)).unwrap();
    });
    loaded.apply_commands();
    assert_eq!(loaded.get::<Leader>(a), Some(&Leader(Entity::DEAD)), "{backend}");
    assert_eq!(loaded.len(), 4, "{backend}");
}

/// Values of a registered type that count the passes over them (one counter per backend run: the backends run one
/// after another in this test).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counted(Entity);
static PASSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
impl HoldsEntities for Counted {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        visit(self.0)
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        map(&mut self.0)
    }
}

/// The pass after an apply visits a registered type only if its values may have received a handle since the last
/// one: written by `&mut`, by insert or by spawn.
fn the_pass_visits_only_the_types_written_since(backend: Backend) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut w = World::new();
    w.set_backend(backend);
    w.register_entity_holder::<Counted>();
    let a = w.spawn((Pos(0.0, 0.0), Counted(Entity::DEAD))).unwrap();
    let spawn_marker = |w: &mut World| {
        w.query::<&Pos>().for_each_with_commands(|_, _, commands| {
            commands.spawn((Vel(0.0, 0.0),)).unwrap();
        })
    };
    // Written (spawned) since the last pass: visited.
    spawn_marker(&mut w);
    let before = PASSES.load(Relaxed);
    w.apply_commands();
    assert_eq!(PASSES.load(Relaxed) - before, 1, "{backend}: the spawned value");
    // Not written since: an apply with deferred spawns leaves it alone.
    spawn_marker(&mut w);
    let before = PASSES.load(Relaxed);
    w.apply_commands();
    assert_eq!(PASSES.load(Relaxed), before, "{backend}: nothing written, nothing visited");
    // Each way of writing brings it back.
    let writes: [&dyn Fn(&mut World); 6] = [
        &|w| {
            // `None` on the other backends: asking is enough to note it.
            let _ = w.sparse_set_mut::<Counted>();
        },
        &|w| assert!(w.get_mut::<Counted>(a).is_some()),
        &|w| w.query::<&mut Counted>().for_each(|_, _| ()),
        &|w| assert!(w.insert(a, Counted(Entity::DEAD)).is_ok()),
        &|w| assert!(w.view_mut::<Counted>().get(a).is_some()),
        &|w| assert!(w.spawn((Counted(Entity::DEAD),)).is_ok()),
    ];
    for (k, write) in writes.iter().enumerate() {
        spawn_marker(&mut w);
        write(&mut w);
        let before = PASSES.load(Relaxed);
        w.apply_commands();
        assert!(PASSES.load(Relaxed) > before, "{backend}: write {k} was not noted");
    }
    // A deferred handle written by `&mut` follows its spawn.
    let mut made = None;
    w.query::<(&Pos, &mut Counted)>().for_each_with_commands(|_, (_, counted), commands| {
        let new = commands.spawn((Vel(1.0, 1.0),)).unwrap();
        counted.0 = new;
        made = Some(new);
    });
    w.apply_commands();
    let kept = w.get::<Counted>(a).unwrap().0;
    assert!(w.get::<Vel>(kept) == Some(&Vel(1.0, 1.0)), "{backend}: {kept:?}");
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        kept_deferred_handles_become_the_spawned_entities,
        refused_and_discarded_spawns_leave_dead_handles,
        a_loaded_deferred_handle_names_nothing,
        the_pass_visits_only_the_types_written_since,
    }
}
