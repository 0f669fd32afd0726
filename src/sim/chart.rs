//! The backend comparison as an SVG chart: per backend, a bar of frame time split by system with the p99 marked,
//! and a bar of storage bytes per entity. Small hand-written SVG (rectangles, lines and text), so the chart needs
//! no plotting crate and reads the same in any browser.

use super::compare::bytes_per_entity;
use super::report::Report;
use std::fmt::Write;

/// Colours for the systems, in order, as `0xRRGGBB`: one each for more systems than the game has (`tests/sim.rs`
/// checks), so no two share one. The window's compare view draws with the same.
pub const PALETTE: [u32; 16] = [
    0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac, 0xa0cbe8,
    0xffbe7d, 0x8cd17d, 0xb6992d, 0x499894, 0xd4a6c8,
];

/// System `i`'s colour as SVG writes it.
fn system_colour(i: usize) -> String {
    format!("#{:06x}", PALETTE[i % PALETTE.len()])
}

const WIDTH: f64 = 1000.0;
const LABEL: f64 = 170.0; // left column: backend names and their figures
const TIME_W: f64 = 520.0; // the frame-time panel
const GAP: f64 = 40.0;
const BYTES_W: f64 = WIDTH - LABEL - TIME_W - GAP - 30.0;
const ROW: f64 = 44.0;
const TOP: f64 = 70.0;

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A scale's end: the smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten) at or above
/// `max`, so the longest bar fills most of its panel (the window's compare view uses it too).
pub fn nice(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&v| v >= max)
        .unwrap_or(10.0 * power)
}

/// The chart of `reports` (one per backend), under `title`.
pub fn svg(reports: &[Report], title: &str) -> String {
    let systems: Vec<&str> =
        reports.first().map_or(Vec::new(), |r| r.systems.iter().map(|s| s.name.as_str()).collect());
    let legend_rows = systems.len().div_ceil(4);
    let height = TOP + ROW * reports.len() as f64 + 64.0 + 22.0 * legend_rows as f64;
    let time_max = nice(reports.iter().map(|r| r.p99_ms.max(r.mean_ms)).fold(0.0, f64::max));
    let bytes_max = nice(reports.iter().map(bytes_per_entity).fold(0.0, f64::max));
    let agree = reports.windows(2).all(|w| w[0].digest == w[1].digest);
    let mut out = String::new();
    let w = &mut out;
    writeln!(w, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="13">"#).ok();
    writeln!(w, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##).ok();
    writeln!(w, r#"<text x="{LABEL}" y="24" font-size="16" font-weight="bold">{}</text>"#, escape(title)).ok();
    let check = match reports.first() {
        Some(first) if agree => format!("all {} backends ended on digest {}", reports.len(), first.digest),
        Some(_) => "the backends ended on DIFFERENT digests".to_string(),
        None => "no backend ran".to_string(),
    };
    let colour = if agree { "#2b7a2b" } else { "#c0392b" };
    writeln!(w, r#"<text x="{LABEL}" y="42" fill="{colour}">{}</text>"#, escape(&check)).ok();
    let bytes_x = LABEL + TIME_W + GAP;
    writeln!(
        w,
        r#"<text x="{LABEL}" y="{}">frame ms: per system (mean), | = p99; axis to {time_max}</text>"#,
        TOP - 8.0
    )
    .ok();
    writeln!(w, r#"<text x="{bytes_x}" y="{}">bytes per entity; axis to {bytes_max}</text>"#, TOP - 8.0).ok();
    let axis_y = TOP + ROW * reports.len() as f64 - 6.0;
    for (at, value) in [(0.0, 0.0), (0.5, time_max / 2.0), (1.0, time_max)] {
        let x = LABEL + at * TIME_W;
        writeln!(w, r##"<line x1="{x:.2}" x2="{x:.2}" y1="{TOP}" y2="{axis_y:.2}" stroke="#ddd"/>"##).ok();
        writeln!(
            w,
            r##"<text x="{x:.2}" y="{:.2}" text-anchor="middle" fill="#555" font-size="11">{value} ms</text>"##,
            axis_y + 13.0
        )
        .ok();
    }
    for (row, report) in reports.iter().enumerate() {
        let y = TOP + ROW * row as f64;
        let bar_h = ROW - 16.0;
        writeln!(
            w,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LABEL - 8.0,
            y + bar_h * 0.45,
            escape(&report.backend)
        )
        .ok();
        let mut x = LABEL;
        for (i, system) in report.systems.iter().enumerate() {
            let width = system.mean_ms / time_max * TIME_W;
            writeln!(
                w,
                r#"<rect class="system" x="{x:.2}" y="{y:.2}" width="{width:.2}" height="{bar_h:.2}" fill="{}"><title>{}: {:.3} ms</title></rect>"#,
                system_colour(i),
                escape(&system.name),
                system.mean_ms
            )
            .ok();
            x += width;
        }
        let p99 = LABEL + report.p99_ms / time_max * TIME_W;
        writeln!(
            w,
            r##"<line class="p99" x1="{p99:.2}" x2="{p99:.2}" y1="{:.2}" y2="{:.2}" stroke="#222" stroke-width="2"/>"##,
            y - 3.0,
            y + bar_h + 3.0
        )
        .ok();
        writeln!(
            w,
            r##"<text x="{:.2}" y="{:.2}" text-anchor="end" fill="#555" font-size="11">mean {:.2}, p99 {:.2} ms</text>"##,
            LABEL - 8.0,
            y + bar_h + 4.0,
            report.mean_ms,
            report.p99_ms
        )
        .ok();
        let bytes = bytes_per_entity(report);
        let width = bytes / bytes_max * BYTES_W;
        writeln!(w, r##"<rect class="bytes" x="{bytes_x:.2}" y="{y:.2}" width="{width:.2}" height="{bar_h:.2}" fill="#8c8c8c"/>"##).ok();
        writeln!(w, r#"<text x="{:.2}" y="{:.2}">{bytes:.0}</text>"#, bytes_x + width + 4.0, y + bar_h * 0.7).ok();
    }
    let legend_y = TOP + ROW * reports.len() as f64 + 34.0;
    for (i, name) in systems.iter().enumerate() {
        let (col, row) = ((i % 4) as f64, (i / 4) as f64);
        let (x, y) = (LABEL + col * 200.0, legend_y + row * 22.0);
        writeln!(w, r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/>"#, y - 10.0, system_colour(i)).ok();
        writeln!(w, r#"<text x="{}" y="{y}">{}</text>"#, x + 18.0, escape(name)).ok();
    }
    writeln!(w, "</svg>").ok();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::report::SystemTime;

    fn report(backend: &str, systems: &[f64], p99: f64, bytes: usize) -> Report {
        Report {
            backend: backend.into(),
            ended_on: backend.into(),
            switches: 0,
            switch_mean_ms: 0.0,
            frames: 10,
            mean_ms: systems.iter().sum(),
            p50_ms: 0.0,
            p99_ms: p99,
            max_ms: p99,
            threads: 1,
            systems: systems
                .iter()
                .enumerate()
                .map(|(i, &ms)| SystemTime { name: format!("s{i}"), mean_ms: ms, elsewhere_ms: 0.0 })
                .collect(),
            groups: Vec::new(),
            modified: false,
            peak_live: 100,
            live: 100,
            spawned: 0,
            deaths: 0,
            particles: 0,
            fighters_refused: 0,
            short_of_target: 0,
            particles_refused: 0,
            commands_applied: 0,
            commands_skipped: 0,
            stale_caught: 0,
            storage_bytes: bytes,
            peak_storage_bytes: bytes,
            allocator_bytes: 0,
            digest: "00000000000000ab".into(),
        }
    }

    fn widths(svg: &str, class: &str) -> Vec<f64> {
        let tag = format!(r#"<rect class="{class}""#);
        svg.match_indices(&tag)
            .map(|(at, _)| {
                let rest = &svg[at..];
                let w = &rest[rest.find("width=\"").unwrap() + 7..];
                w[..w.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn bars_are_to_scale_and_text_is_escaped() {
        let reports = [report("a<b", &[1.0, 3.0], 5.0, 4_000), report("c", &[2.0, 2.0], 4.5, 8_000)];
        let svg = svg(&reports, "1 & 2");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a&lt;b") && svg.contains("1 &amp; 2") && !svg.contains("a<b"));
        // Two systems per backend; the axis ends at 5 ms (p99), so 1 ms is a fifth of the panel.
        let time = widths(&svg, "system");
        assert_eq!(time.len(), 4);
        assert!((time[0] - TIME_W / 5.0).abs() < 0.01 && (time[1] - 3.0 * TIME_W / 5.0).abs() < 0.01, "{time:?}");
        // 40 and 80 bytes per entity on an axis to 80.
        let bytes = widths(&svg, "bytes");
        assert!((bytes[0] - 0.5 * BYTES_W).abs() < 0.01 && (bytes[1] - BYTES_W).abs() < 0.01, "{bytes:?}");
        assert_eq!(svg.matches(r#"class="p99""#).count(), 2);
        assert!(svg.contains("all 2 backends ended on digest 00000000000000ab"));
        let mut differ = reports.clone();
        differ[1].digest = "ff".into();
        assert!(super::svg(&differ, "t").contains("DIFFERENT digests"));
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice(4.2), 5.0);
        assert_eq!(nice(0.37), 0.4);
        assert_eq!(nice(120.0), 150.0);
        assert_eq!(nice(21.8), 25.0);
        assert_eq!(nice(0.0), 1.0);
    }
}
