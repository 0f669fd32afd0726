//! Pure helpers for the window's text and scales: round axis steps, a graph top that follows its samples without
//! flickering, text cut to fit a width, words wrapped to lines, a flowing line of key hints. No macroquad here:
//! text widths come from a `measure` function, so all of it is tested without a window.

/// The round steps an axis may use: 1, 2, 2.5 and 5 times a power of ten.
const STEPS: [f64; 4] = [1.0, 2.0, 2.5, 5.0];

/// A round axis for values up to `max`: the smallest step among 1, 2, 2.5, 5 x 10^k such that at most `ticks`
/// steps reach `max`, and the top (a whole number of steps, at least one). Returns `(top, step)`.
pub fn axis(max: f64, ticks: u32) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let ticks = ticks.max(1) as f64;
    let mut power = 10f64.powf((max / ticks).log10().floor());
    loop {
        for m in STEPS {
            let step = m * power;
            let n = (max / step - 1e-9).ceil().max(1.0);
            if n <= ticks {
                return (n * step, step);
            }
        }
        power *= 10.0;
    }
}

/// A graph's top that follows the samples it shows: it rises at once to a round value over a new peak, and falls
/// only when the peak has dropped below half of it, so a graph near a boundary does not flicker between scales.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphTop {
    top: f64,
    step: f64,
}

impl Default for GraphTop {
    fn default() -> Self {
        Self { top: 20.0, step: 5.0 }
    }
}

impl GraphTop {
    /// Takes the peak of the visible samples; returns the top.
    pub fn update(&mut self, peak: f64) -> f64 {
        // A little headroom, so the peak does not touch the top edge.
        let (top, step) = axis(peak * 1.1, 4);
        if top > self.top || top * 2.0 <= self.top {
            (self.top, self.step) = (top, step);
        }
        self.top
    }

    /// The top value.
    #[cfg(test)]
    pub fn top(&self) -> f64 {
        self.top
    }

    /// The step between gridlines.
    pub fn step(&self) -> f64 {
        self.step
    }
}

/// The suffix drawn where text was cut.
pub const ELLIPSIS: &str = "...";

/// How many bytes of `text` to draw so that it fits in `width`: all of it if it fits, else the longest prefix
/// (cut at a character boundary) that fits with [`ELLIPSIS`] after it. `measure` gives a string's width.
pub fn fit(text: &str, width: f32, measure: impl Fn(&str) -> f32) -> usize {
    if measure(text) <= width {
        return text.len();
    }
    let room = width - measure(ELLIPSIS);
    // Binary search over the number of characters kept.
    let byte = |k: usize| text.char_indices().nth(k).map_or(text.len(), |(i, _)| i);
    let (mut lo, mut hi) = (0usize, text.chars().count());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if measure(&text[..byte(mid)]) <= room {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    byte(lo)
}

/// The first line of `text` wrapped at spaces to `width`, and the rest (leading spaces dropped). A word wider than
/// the line stands on a line of its own.
pub fn wrap(text: &str, width: f32, measure: impl Fn(&str) -> f32) -> (&str, &str) {
    let text = text.trim_start();
    if measure(text) <= width {
        return (text, "");
    }
    let mut end = None;
    for (i, c) in text.char_indices() {
        if c == ' ' {
            if measure(&text[..i]) > width {
                break;
            }
            end = Some(i);
        }
    }
    // No space fits: the first word stands alone.
    let end = end.or_else(|| text.find(' '));
    match end {
        Some(i) => (&text[..i], text[i..].trim_start()),
        None => (text, ""),
    }
}

/// What a label of the frame-time graph names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphLabel {
    /// The top of the scale.
    Top,
    /// The 60 FPS guide.
    Fps60,
    /// The 30 FPS guide.
    Fps30,
    /// Both guides, when they are too close to label apart (placed by the 30 FPS one).
    Fps60And30,
    /// The gridlines' step.
    Step,
    /// The bottom, 0 ms.
    Zero,
}

/// Baselines (from the graph's top, `height` tall, on a scale to `top_ms`) for the graph's labels, each at least
/// `line` px from the others, in order of importance: the scale's top, the guides (each just above its line, or
/// just under it when that is taken), the gridlines' step, 0 at the bottom. A label that finds no room is left out
/// (a guide's line is still drawn). The labels go in a gutter the plotted lines never enter.
pub fn graph_labels(top_ms: f32, height: f32, line: f32) -> impl Iterator<Item = (GraphLabel, f32)> {
    let mut placed: [(GraphLabel, f32); 5] = [(GraphLabel::Top, f32::NAN); 5];
    let mut n = 0;
    let mut place = |label: GraphLabel, candidates: &[f32]| {
        let free =
            |y: f32| (line - 2.0..=height).contains(&y) && placed[..n].iter().all(|&(_, at)| (at - y).abs() >= line);
        if let Some(&y) = candidates.iter().find(|&&y| free(y)) {
            placed[n] = (label, y);
            n += 1;
        }
    };
    place(GraphLabel::Top, &[line - 2.0]);
    let y_of = |ms: f32| height - height * (ms / top_ms);
    let together = 1000.0 / 30.0 < top_ms && y_of(1000.0 / 60.0) - y_of(1000.0 / 30.0) < line;
    let guides = match together {
        true => [(f32::INFINITY, GraphLabel::Fps60), (1000.0 / 30.0, GraphLabel::Fps60And30)],
        false => [(1000.0 / 60.0, GraphLabel::Fps60), (1000.0 / 30.0, GraphLabel::Fps30)],
    };
    for (ms, label) in guides {
        if ms < top_ms {
            let at = height - height * (ms / top_ms);
            place(label, &[at - 2.0, at + line - 2.0]);
        }
    }
    place(GraphLabel::Step, &[2.0 * line - 2.0]);
    place(GraphLabel::Zero, &[height - 3.0]);
    placed.into_iter().take(n)
}

/// Places `items` (each a width) left to right in lines of `width` with `gap` between items; calls `place(index,
/// x, line)` for each. Returns the number of lines.
pub fn flow(items: impl Iterator<Item = f32>, width: f32, gap: f32, mut place: impl FnMut(usize, f32, usize)) -> usize {
    let (mut x, mut line, mut any) = (0.0f32, 0usize, false);
    for (i, w) in items.enumerate() {
        if any && x + w > width {
            x = 0.0;
            line += 1;
        }
        place(i, x, line);
        x += w + gap;
        any = true;
    }
    line + any as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A monospace measure: 10 units a character.
    fn mono(s: &str) -> f32 {
        s.chars().count() as f32 * 10.0
    }

    #[test]
    fn axes_use_round_steps_and_cover_the_maximum() {
        assert_eq!(axis(5.13, 4), (6.0, 2.0));
        assert_eq!(axis(3.92, 4), (4.0, 1.0));
        assert_eq!(axis(7.5, 4), (8.0, 2.0));
        assert_eq!(axis(9.0, 4), (10.0, 2.5));
        assert_eq!(axis(66.0, 4), (80.0, 20.0));
        assert_eq!(axis(150.0, 4), (150.0, 50.0));
        assert_eq!(axis(0.0, 4), (1.0, 0.25), "nothing to show: an axis to 1");
        for k in 1..2000 {
            let max = k as f64 * 0.37;
            let (top, step) = axis(max, 5);
            assert!(top >= max && top / step <= 5.0 + 1e-9, "{max}: {top} {step}");
            let power = 10f64.powf(step.log10().floor());
            let mantissa = step / power;
            assert!(STEPS.iter().any(|m| (m - mantissa).abs() < 1e-9), "{max}: step {step}");
            // Never more than one step of empty room.
            assert!(top - step < max, "{max}: {top} {step}");
        }
    }

    #[test]
    fn the_graph_top_rises_at_once_and_falls_only_past_half() {
        let mut top = GraphTop::default();
        assert_eq!(top.update(17.0), 20.0);
        assert_eq!(top.update(70.0), 80.0, "rises over a new peak");
        assert_eq!(top.update(45.0), 80.0, "a peak of 45 fits under 80: kept");
        assert_eq!(top.update(36.0), 40.0, "falls once the rounded peak is half of the top or less");
        assert_eq!(top.update(17.0), 20.0);
        // Samples wobbling around a boundary: one rise, then no flicker.
        assert_eq!(top.update(19.9), 30.0);
        for peak in [17.0, 19.5, 18.0, 19.9, 16.5] {
            assert_eq!(top.update(peak), 30.0);
        }
        assert_eq!(top.step() * 3.0, top.top());
    }

    #[test]
    fn fit_cuts_to_the_width_with_room_for_the_ellipsis() {
        assert_eq!(fit("short", 100.0, mono), 5);
        let text = "digest 0123456789abcdef @ frame 1234";
        let n = fit(text, 150.0, mono);
        assert!(mono(&text[..n]) + mono(ELLIPSIS) <= 150.0);
        assert!(mono(&text[..n + 1]) + mono(ELLIPSIS) > 150.0, "the longest prefix");
        assert_eq!(fit(text, 5.0, mono), 0);
        let wide = "é".repeat(20);
        let n = fit(&wide, 100.0, mono);
        assert!(wide.is_char_boundary(n) && n > 0);
    }

    #[test]
    fn graph_labels_keep_apart_and_label_the_guides_when_there_is_room() {
        for k in 1..400 {
            let top = k as f32 * 2.5;
            let labels: Vec<_> = graph_labels(top, 70.0, 13.0).collect();
            assert_eq!(labels[0], (GraphLabel::Top, 11.0), "{top}: the scale's top is always labelled");
            for (i, &(a, y)) in labels.iter().enumerate() {
                assert!((11.0..=70.0).contains(&y), "{top}: {a:?} at {y}");
                for &(b, other) in &labels[i + 1..] {
                    assert!((y - other).abs() >= 13.0, "{top}: {a:?} at {y} and {b:?} at {other}");
                }
            }
            // A guide drawn well inside the graph has its label (above or under its line), or one label names
            // both guides when they are too close to label apart.
            let both = labels.iter().any(|&(l, _)| l == GraphLabel::Fps60And30);
            for ms in [1000.0 / 60.0, 1000.0 / 30.0] {
                let at = 70.0 - 70.0 * ms / top;
                let guide = if ms < 20.0 { GraphLabel::Fps60 } else { GraphLabel::Fps30 };
                if (26.0..=50.0).contains(&at) {
                    assert!(both || labels.iter().any(|&(l, _)| l == guide), "{top}: {guide:?} at {at} unlabelled");
                }
            }
            assert_eq!(both, top > 1000.0 / 30.0 && 70.0 * (1000.0 / 60.0) / top < 13.0, "{top}: {labels:?}");
        }
    }

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        let text = "two armies: red starts left, blue right, and they meet in a front";
        let (mut rest, mut lines) = (text, Vec::new());
        while !rest.is_empty() {
            let (line, next) = wrap(rest, 200.0, mono);
            lines.push(line);
            rest = next;
        }
        assert!(lines.iter().all(|l| mono(l) <= 200.0), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap("unbreakableword rest", 50.0, mono), ("unbreakableword", "rest"));
    }

    #[test]
    fn flow_moves_to_a_new_line_when_full() {
        let mut placed = Vec::new();
        let lines = flow([40.0, 40.0, 40.0, 90.0].into_iter(), 100.0, 10.0, |i, x, line| placed.push((i, x, line)));
        assert_eq!(lines, 3);
        assert_eq!(placed, vec![(0, 0.0, 0), (1, 50.0, 0), (2, 0.0, 1), (3, 0.0, 2)]);
        assert_eq!(flow(std::iter::empty(), 100.0, 10.0, |_, _, _| {}), 0);
    }
}
