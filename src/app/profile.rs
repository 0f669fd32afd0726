//! The span recorder: turns the `tracing` spans the app opens around each system into per-system milliseconds
//! (for the overlay and the headless report) and, on request, into a Chrome trace that Perfetto opens.
//!
//! Every system run is a span `system` with fields `system` (the system's name) and `id` (its row in the table). The
//! recorder is a `tracing_subscriber` layer over a registry that the [`App`](super::App) installs as the
//! thread's default only while it runs a system, so several apps (and parallel tests) never share timings.
//! After warm-up it allocates nothing: span ids are recycled by the registry and the recorder's tables reuse slots.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Timings of one named span kind (a system, or `render` / `overlay` in the window).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpanStat {
    /// The name the span carried.
    pub name: String,
    /// Duration of the last run, in milliseconds.
    pub last_ms: f64,
    /// Sum of all runs since the last [`Timings::reset`], in milliseconds.
    pub total_ms: f64,
    /// Number of runs since the last reset.
    pub runs: u64,
    /// Milliseconds of the last run's work that other threads did (pieces of its parallel loops and splits they
    /// took: see [`crate::ecs::Elsewhere`]). In a batch whose systems ran at once, it counts the whole batch's.
    pub elsewhere_ms: f64,
    /// Sum of [`SpanStat::elsewhere_ms`] over the runs since the last reset.
    pub elsewhere_total_ms: f64,
    /// Whether a second thread paid in the last run: other systems of its batch ran at once, or other threads did
    /// work of its own worth at least [`PAID_SHARE`] of its time (a system that splits a loop too small to pay
    /// for its joins, or whose other thread sat waiting, is not marked).
    pub parallel: bool,
}

/// The share of a system's time that other threads must have worked on it for the system to count as parallel
/// ([`SpanStat::parallel`]): below it, what the second thread did is about what splitting the work costs.
pub const PAID_SHARE: f64 = 0.25;

impl SpanStat {
    /// Mean milliseconds per run of the work other threads did ([`SpanStat::elsewhere_ms`]).
    pub fn mean_elsewhere_ms(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.elsewhere_total_ms / self.runs as f64
        }
    }

    /// Mean milliseconds per run.
    pub fn mean_ms(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.total_ms / self.runs as f64
        }
    }
}

/// The table the recorder fills, by span id (the `id` field).
#[derive(Debug, Default)]
pub struct Timings {
    stats: Vec<SpanStat>,
}

impl Timings {
    /// One row per id registered with [`Profiler::register`].
    pub fn stats(&self) -> &[SpanStat] {
        &self.stats
    }

    /// The row named `name`.
    pub fn get(&self, name: &str) -> Option<&SpanStat> {
        self.stats.iter().find(|s| s.name == name)
    }

    /// Clears totals and run counts (names stay).
    pub fn reset(&mut self) {
        for s in &mut self.stats {
            s.total_ms = 0.0;
            s.runs = 0;
            s.last_ms = 0.0;
            s.elsewhere_ms = 0.0;
            s.elsewhere_total_ms = 0.0;
            s.parallel = false;
        }
    }
}

/// Whether other threads' `elsewhere_ms` of work paid in a run of `last_ms`: at least [`PAID_SHARE`] of it.
pub fn paid(last_ms: f64, elsewhere_ms: f64) -> bool {
    elsewhere_ms > 0.0 && elsewhere_ms >= PAID_SHARE * last_ms
}

struct Open {
    span: Option<Id>,
    row: usize,
    start: Instant,
}

struct ChromeEvent {
    /// The thread's lane (1 for the first thread that recorded a span, then 2, ...).
    lane: u32,
    row: usize,
    start_us: f64,
    dur_us: f64,
}

struct Shared {
    timings: Timings,
    open: Vec<Open>,
    trace: Option<Vec<ChromeEvent>>,
    epoch: Instant,
}

/// The per-app recorder: a handle to shared timings plus the `tracing` dispatch that feeds them.
#[derive(Clone)]
pub struct Profiler {
    shared: Arc<Mutex<Shared>>,
    dispatch: tracing::Dispatch,
    /// The work other threads did for the spans timed ([`Profiler::time`]).
    elsewhere: crate::ecs::Elsewhere,
}

impl Default for Profiler {
    fn default() -> Self {
        Self::new()
    }
}

impl Profiler {
    /// A recorder with its own registry.
    pub fn new() -> Self {
        use tracing_subscriber::layer::SubscriberExt;
        let shared = Arc::new(Mutex::new(Shared {
            timings: Timings::default(),
            open: Vec::new(),
            trace: None,
            epoch: Instant::now(),
        }));
        let subscriber = tracing_subscriber::registry().with(Recorder { shared: shared.clone() });
        Self { shared, dispatch: tracing::Dispatch::new(subscriber), elsewhere: crate::ecs::Elsewhere::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic inside a system leaves the timings usable: they hold plain numbers.
        self.shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reserves a row for spans named `name`; returns the id to put in the span's `id` field.
    pub fn register(&self, name: &str) -> u64 {
        let mut shared = self.lock();
        if let Some(row) = shared.timings.stats.iter().position(|s| s.name == name) {
            return row as u64;
        }
        shared.timings.stats.push(SpanStat { name: name.to_string(), ..SpanStat::default() });
        shared.open.reserve(4);
        (shared.timings.stats.len() - 1) as u64
    }

    /// Runs `f` with this recorder as the thread's `tracing` dispatcher.
    pub fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        tracing::dispatcher::with_default(&self.dispatch, f)
    }

    /// Runs `f` inside a span `system { name, id }`, recorded in the row `id`; the work other threads do for it
    /// counts into [`Profiler::elsewhere_ns`].
    #[inline]
    pub fn time<T>(&self, name: &'static str, id: u64, f: impl FnOnce() -> T) -> T {
        tracing::dispatcher::with_default(&self.dispatch, || {
            let span = tracing::info_span!("system", system = name, id = id);
            let _entered = span.enter();
            crate::ecs::count_elsewhere(&self.elsewhere, f)
        })
    }

    /// Nanoseconds of work other threads did for the spans of [`Profiler::time`] so far (see
    /// [`crate::ecs::Elsewhere`]): the app takes it before and after a system.
    pub fn elsewhere_ns(&self) -> u64 {
        self.elsewhere.ns()
    }

    /// Notes what other threads did in the last run of row `id` (after [`Profiler::time`] recorded it): whether
    /// other systems of its batch ran at once (`together`), and the nanoseconds of its work they did. Sets
    /// [`SpanStat::parallel`] by [`paid`].
    pub fn set_parallel(&self, id: u64, together: bool, elsewhere_ns: u64) {
        if let Some(stat) = self.lock().timings.stats.get_mut(id as usize) {
            stat.elsewhere_ms = elsewhere_ns as f64 / 1e6;
            stat.elsewhere_total_ms += stat.elsewhere_ms;
            stat.parallel = together || paid(stat.last_ms, stat.elsewhere_ms);
        }
    }

    /// Notes that row `id` did nothing this time (its work is off): its last run shows 0 ms; totals and runs are
    /// unchanged.
    pub fn idle(&self, id: u64) {
        if let Some(stat) = self.lock().timings.stats.get_mut(id as usize) {
            stat.last_ms = 0.0;
            stat.elsewhere_ms = 0.0;
            stat.parallel = false;
        }
    }

    /// A copy of the current timings.
    pub fn snapshot(&self, out: &mut Vec<SpanStat>) {
        let shared = self.lock();
        out.clear();
        out.extend(shared.timings.stats.iter().cloned());
    }

    /// Runs `f` with the timings.
    pub fn with_timings<T>(&self, f: impl FnOnce(&Timings) -> T) -> T {
        f(&self.lock().timings)
    }

    /// Clears totals and run counts.
    pub fn reset(&self) {
        self.lock().timings.reset();
    }

    /// Starts keeping every span for a Chrome trace.
    pub fn start_trace(&self) {
        self.lock().trace.get_or_insert_with(|| Vec::with_capacity(1 << 16));
    }

    /// Writes the kept spans as a Chrome trace (JSON array format) to `path`, and keeps recording.
    pub fn write_trace(&self, path: &Path) -> io::Result<()> {
        // Whole or not at all: written beside `path`, then renamed over it.
        crate::files::write_whole(path, |temp| self.write_trace_file(temp).map_err(|e| e.to_string()))
            .map_err(io::Error::other)
    }

    fn write_trace_file(&self, path: &Path) -> io::Result<()> {
        let shared = self.lock();
        let events = shared.trace.as_deref().unwrap_or(&[]);
        let file = File::create(path)?;
        let mut out = BufWriter::new(file);
        writeln!(out, "{{\"traceEvents\":[")?;
        // One lane per thread that ran a system (numbered in the order threads of the process first did).
        let mut lanes: Vec<u32> = events.iter().map(|e| e.lane).collect();
        lanes.sort_unstable();
        lanes.dedup();
        for lane in lanes {
            let name = format!("thread {lane}");
            writeln!(
                out,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{lane},\"args\":{{\"name\":\"{name}\"}}}},"
            )?;
        }
        for (k, e) in events.iter().enumerate() {
            let name = &shared.timings.stats[e.row].name;
            let comma = if k + 1 == events.len() { "" } else { "," };
            writeln!(
                out,
                "{{\"name\":{},\"cat\":\"system\",\"ph\":\"X\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":1,\"tid\":{}}}{comma}",
                serde_json::to_string(name).expect("a string serializes"),
                e.start_us,
                e.dur_us,
                e.lane
            )?;
        }
        writeln!(out, "],\"displayTimeUnit\":\"ms\"}}")?;
        out.flush()
    }
}

/// Where a trace goes, and the recorder that fills it; writes on drop so that closing the window or an early
/// return still flushes the file.
pub struct TraceFile {
    profiler: Profiler,
    path: PathBuf,
    written: bool,
}

impl TraceFile {
    /// Starts tracing `profiler` into `path`. Fails early if the file could not be created (nothing is created yet).
    pub fn create(profiler: &Profiler, path: PathBuf) -> io::Result<Self> {
        // Checked, not created: a run that never finishes leaves no empty file.
        crate::files::check_writable(&path, &[]).map_err(io::Error::other)?;
        profiler.start_trace();
        Ok(Self { profiler: profiler.clone(), path, written: false })
    }

    /// Writes the trace now.
    pub fn finish(mut self) -> io::Result<()> {
        self.written = true;
        self.profiler.write_trace(&self.path)
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        if !self.written {
            if let Err(error) = self.profiler.write_trace(&self.path) {
                eprintln!("swarm: could not write trace {}: {error}", self.path.display());
            }
        }
    }
}

struct Recorder {
    shared: Arc<Mutex<Shared>>,
}

/// The lanes handed out so far, over the process.
static LANES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

thread_local! {
    /// This thread's lane in traces; 0 until it records its first span.
    static LANE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// This thread's lane in traces, handed out the first time it records a span.
fn lane() -> u32 {
    LANE.with(|lane| {
        if lane.get() == 0 {
            lane.set(LANES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
        }
        lane.get()
    })
}

struct IdVisitor(Option<u64>);

impl Visit for IdVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "id" {
            self.0 = Some(value);
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "id" {
            self.0 = u64::try_from(value).ok();
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut visitor = IdVisitor(None);
        attrs.record(&mut visitor);
        let Some(row) = visitor.0 else { return };
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if row as usize >= shared.timings.stats.len() {
            return; // a span of someone else's: not ours to time
        }
        let open = Open { span: Some(id.clone()), row: row as usize, start: Instant::now() };
        match shared.open.iter_mut().find(|o| o.span.is_none()) {
            Some(slot) => *slot = open,
            None => shared.open.push(open),
        }
    }

    fn on_enter(&self, id: &Id, _: Context<'_, S>) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = shared.open.iter_mut().find(|o| o.span.as_ref() == Some(id)) {
            open.start = Instant::now();
        }
    }

    fn on_exit(&self, id: &Id, _: Context<'_, S>) {
        let end = Instant::now();
        let mut guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let shared = &mut *guard;
        let Some(open) = shared.open.iter_mut().find(|o| o.span.as_ref() == Some(id)) else { return };
        let ms = (end - open.start).as_secs_f64() * 1e3;
        let row = open.row;
        let start_us = (open.start - shared.epoch).as_secs_f64() * 1e6;
        let stat = &mut shared.timings.stats[row];
        stat.last_ms = ms;
        stat.total_ms += ms;
        stat.runs += 1;
        if let Some(trace) = &mut shared.trace {
            trace.push(ChromeEvent { lane: lane(), row, start_us, dur_us: ms * 1e3 });
        }
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = shared.open.iter_mut().find(|o| o.span.as_ref() == Some(&id)) {
            open.span = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_thread_pays_from_a_quarter_of_the_time() {
        assert!(!paid(1.0, 0.0));
        assert!(!paid(1.0, 0.24));
        assert!(paid(1.0, 0.25));
        assert!(paid(2.0, 1.5));
        assert!(!paid(0.0, 0.0), "no work elsewhere never pays");
    }

    #[test]
    fn a_run_notes_the_work_done_elsewhere() {
        let profiler = Profiler::new();
        let a = profiler.register("a");
        profiler.time("a", a, || std::thread::sleep(std::time::Duration::from_millis(4)));
        profiler.set_parallel(a, false, 3_000_000);
        profiler.set_parallel(a, false, 0); // a later note of the same run replaces the figure, not the total
        profiler.time("a", a, || std::thread::sleep(std::time::Duration::from_millis(4)));
        profiler.set_parallel(a, false, 2_000_000);
        profiler.with_timings(|t| {
            let s = t.get("a").unwrap();
            assert_eq!((s.elsewhere_ms, s.runs), (2.0, 2));
            assert_eq!(s.elsewhere_total_ms, 5.0);
            assert_eq!(s.parallel, paid(s.last_ms, 2.0));
        });
        profiler.set_parallel(a, true, 0);
        assert!(profiler.with_timings(|t| t.get("a").unwrap().parallel), "a batch run at once is parallel");
        profiler.idle(a);
        profiler.with_timings(|t| {
            assert_eq!((t.get("a").unwrap().elsewhere_ms, t.get("a").unwrap().parallel), (0.0, false))
        });
        profiler.reset();
        profiler.with_timings(|t| assert_eq!(t.get("a").unwrap().elsewhere_total_ms, 0.0));
    }

    #[test]
    fn spans_become_per_system_milliseconds() {
        let profiler = Profiler::new();
        let a = profiler.register("a");
        let b = profiler.register("b");
        assert_eq!(profiler.register("a"), a);
        for _ in 0..3 {
            profiler.time("a", a, || std::thread::sleep(std::time::Duration::from_millis(2)));
            profiler.time("b", b, || ());
        }
        profiler.with_timings(|t| {
            let sa = t.get("a").unwrap();
            assert_eq!(sa.runs, 3);
            assert!(sa.mean_ms() >= 2.0, "{sa:?}");
            assert!(t.get("b").unwrap().mean_ms() < sa.mean_ms());
        });
    }

    #[test]
    fn chrome_trace_is_valid_json() {
        let profiler = Profiler::new();
        let a = profiler.register("move \"quoted\"");
        profiler.start_trace();
        profiler.time("a", a, || ());
        profiler.time("a", a, || ());
        let path = std::env::temp_dir().join(format!("swarm-trace-{}.json", std::process::id()));
        profiler.write_trace(&path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let events = json["traceEvents"].as_array().unwrap();
        // The lane's name, then the two spans on it.
        assert_eq!(events.len(), 3);
        assert_eq!((&events[0]["ph"], &events[0]["name"]), (&"M".into(), &"thread_name".into()));
        assert_eq!(events[1]["name"], "move \"quoted\"");
        assert_eq!(events[1]["ph"], "X");
        assert_eq!(events[1]["tid"], events[0]["tid"]);
        std::fs::remove_file(path).ok();
    }
}
