//! The limits of a run's settings, in one place. The command line's flags and the files that carry settings
//! (snapshots and recordings) are checked against the same numbers, so a value refused as a flag is refused in a
//! file too, with a message naming the field and the limit.
//!
//! Each limit keeps a run finite and its memory bounded: an arena or a cell size past these would ask the
//! broadphase for billions of cells, a frame number past [`FRAMES`] would run for days, a zero-sized arena has no
//! point to spawn at.

use super::config::SimConfig;
use std::fmt;
use std::ops::RangeInclusive;

/// Target population (`--entities`): beyond this the arena is solid fighters and memory runs out before insight.
pub const POPULATION: RangeInclusive<u32> = 0..=2_000_000;
/// World capacity (`--capacity`): at least one entity; at most what the largest population needs several times.
pub const CAPACITY: RangeInclusive<u32> = 1..=64 << 20;
/// Frames a run goes (`--frames`), and the highest frame number a recording or snapshot may name: 10 million
/// frames are 46 hours of simulated time at 60 steps a second.
pub const FRAMES: RangeInclusive<u32> = 1..=10_000_000;
/// Frames a sync test rolls back each frame (`--synctest`): what GGRS's prediction window allows.
pub const CHECK_DISTANCE: RangeInclusive<u32> = 1..=8;
/// Frames between live switches (`--switch-every`).
pub const SWITCH_EVERY: RangeInclusive<u32> = 1..=10_000_000;
/// Threads the schedule may use (`--threads`, the window's T key, a recording's `threads` input).
pub const THREADS: RangeInclusive<u32> = 1..=256;
/// Frames between pool alignments (`--align-every`; 0 = never).
pub const ALIGN_EVERY: RangeInclusive<u32> = 0..=10_000_000;
/// Frames each backend runs in the window's compare view (`--compare-frames`).
pub const COMPARE_FRAMES: RangeInclusive<u32> = 1..=100_000;
/// Each side of the arena, in units. The flags size the arena from the population (1920 x 1080 up to 10,000
/// fighters, about 27,000 x 15,000 at the largest population); a file may set any size in this range.
pub const ARENA_SIDE: RangeInclusive<f32> = 64.0..=32_768.0;
/// Broadphase cells (arena / cell size, both ways): the grid holds a slot per cell.
pub const GRID_CELLS: u64 = 1 << 24;
/// Fighter radius, in units.
pub const RADIUS: RangeInclusive<f32> = 0.5..=64.0;
/// Broadphase cell size, in units (and at least two radii: see [`SimConfig::cell_size`]).
pub const CELL_SIZE: RangeInclusive<f32> = 1.0..=1024.0;
/// Wandering and chasing speeds, in units per second.
pub const SPEED: RangeInclusive<f32> = 0.0..=10_000.0;
/// Fighters the spawner adds per frame.
pub const SPAWN_PER_FRAME: RangeInclusive<u32> = 0..=2_000_000;
/// One fighter in this many is a hunter.
pub const HUNTER_EVERY: RangeInclusive<u32> = 1..=1_000_000;
/// Health of a new fighter.
pub const MAX_HEALTH: RangeInclusive<i32> = 1..=1_000_000;
/// Health lost per frame per enemy in contact.
pub const DAMAGE: RangeInclusive<i32> = 0..=1_000_000;
/// Particles per death.
pub const PARTICLES_PER_DEATH: RangeInclusive<u32> = 0..=64;
/// Frames a particle lives.
pub const PARTICLE_LIFE: RangeInclusive<u16> = 0..=3_600;
/// Fighters a click spawns.
pub const BURST: RangeInclusive<u32> = 0..=100_000;
/// How far (in grid cells) a hunter looks for a new target.
pub const SEARCH_CELLS: RangeInclusive<i32> = 0..=64;

/// A setting outside its limit: which one, its value and the limit.
#[derive(Clone, Debug, PartialEq)]
pub struct OutOfRange {
    /// The setting: a flag (`--frames`) or a field of the settings (`arena`).
    pub field: String,
    /// The value found, as written.
    pub value: String,
    /// The limit it breaks, in words ("1 to 10000000").
    pub limit: String,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}, outside the limit of {}", self.field, self.value, self.limit)
    }
}

impl std::error::Error for OutOfRange {}

/// Checks that `value` lies in `range` (a NaN never does).
pub fn check<T: PartialOrd + fmt::Display>(field: &str, value: T, range: &RangeInclusive<T>) -> Result<(), OutOfRange> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(OutOfRange { field: field.to_string(), value: value.to_string(), limit: words(range) })
    }
}

/// A limit in words: "1 to 10000000".
pub fn words<T: fmt::Display>(range: &RangeInclusive<T>) -> String {
    format!("{} to {}", range.start(), range.end())
}

/// Parses a flag's value and checks it against `range`: the value parser of every numeric flag.
pub fn parse_within<T>(text: &str, range: &RangeInclusive<T>) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + fmt::Display,
{
    let value: T = text.trim().parse().map_err(|_| format!("`{text}` is not a whole number in {}", words(range)))?;
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is outside the limit of {}", words(range)))
    }
}

impl SimConfig {
    /// Checks every setting against its limit (and the cell size against the radius, the grid against
    /// [`GRID_CELLS`]). A loaded snapshot's or recording's settings pass here before anything runs.
    pub fn check(&self) -> Result<(), OutOfRange> {
        let side = |value: f32| check("arena", value, &ARENA_SIDE);
        side(self.arena.x).and(side(self.arena.y)).map_err(|mut error| {
            error.value = format!("{} x {}", self.arena.x, self.arena.y);
            error.limit = format!("{} units a side", words(&ARENA_SIDE));
            error
        })?;
        check("target_population", self.target_population, &POPULATION)?;
        check("spawn_per_frame", self.spawn_per_frame, &SPAWN_PER_FRAME)?;
        check("hunter_every", self.hunter_every, &HUNTER_EVERY)?;
        check("radius", self.radius, &RADIUS)?;
        check("fighter_speed", self.fighter_speed, &SPEED)?;
        check("hunter_speed", self.hunter_speed, &SPEED)?;
        check("max_health", self.max_health, &MAX_HEALTH)?;
        check("damage", self.damage, &DAMAGE)?;
        check("particles_per_death", self.particles_per_death, &PARTICLES_PER_DEATH)?;
        check("particle_life", self.particle_life, &PARTICLE_LIFE)?;
        check("burst", self.burst, &BURST)?;
        check("cell_size", self.cell_size, &CELL_SIZE)?;
        if self.cell_size < 2.0 * self.radius {
            return Err(OutOfRange {
                field: "cell_size".into(),
                value: self.cell_size.to_string(),
                limit: format!("at least two radii ({})", 2.0 * self.radius),
            });
        }
        let cells = (self.arena.x / self.cell_size).ceil() as u64 * (self.arena.y / self.cell_size).ceil() as u64;
        if cells > GRID_CELLS {
            return Err(OutOfRange {
                field: "cell_size".into(),
                value: format!(
                    "{} for an arena of {} x {} ({cells} cells)",
                    self.cell_size, self.arena.x, self.arena.y
                ),
                limit: format!("{GRID_CELLS} broadphase cells"),
            });
        }
        check("search_cells", self.search_cells, &SEARCH_CELLS)?;
        check("align_every", self.align_every, &ALIGN_EVERY)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_population_the_flags_allow_makes_settings_within_the_limits() {
        for n in [*POPULATION.start(), 1, 10_000, 150_000, *POPULATION.end()] {
            let config = SimConfig::with_population(n);
            assert_eq!(config.check(), Ok(()), "{n} fighters");
            let capacity = config.default_capacity();
            assert!(CAPACITY.contains(&capacity), "{n} fighters: default capacity {capacity}");
        }
    }

    #[test]
    fn a_nan_or_an_infinity_is_outside_every_float_limit() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert!(check("radius", bad, &RADIUS).is_err(), "{bad}");
            let mut config = SimConfig::default();
            config.arena.y = bad;
            assert_eq!(config.check().unwrap_err().field, "arena", "{bad}");
        }
    }

    #[test]
    fn flag_values_parse_within_their_limit_only() {
        assert_eq!(parse_within("10000000", &FRAMES), Ok(10_000_000));
        assert!(parse_within("10000001", &FRAMES).unwrap_err().contains("1 to 10000000"));
        assert!(parse_within("0", &FRAMES).is_err());
        assert!(parse_within("-5", &POPULATION).unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn the_grid_limit_refuses_a_fine_grid_over_a_wide_arena() {
        let mut config = SimConfig::with_population(2_000_000);
        config.radius = 0.5;
        config.cell_size = 1.0;
        let error = config.check().unwrap_err();
        assert!(error.field == "cell_size" && error.limit.contains("cells"), "{error}");
    }
}
