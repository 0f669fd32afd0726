//! The window: it runs N frames, saves a screenshot and exits 0, and the picture shows sprites of both teams (the
//! armies apart, red left and blue right), the overlay, the panel, the legend under it and the dark strip behind the
//! key line. A missing or broken asset falls back to the built-in art, naming the file.
//!
//! The window needs a display: `xvfb-run` (preferred, a virtual screen of a known size) or a `DISPLAY`. Where
//! neither exists the tests print one line saying so and pass, unless `CI=true` (as `.ci/run` runs), where the
//! window is required and its absence fails. `SWARM_SKIP_WINDOW_TEST=1` skips on purpose.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use swarm::app::profile::Profiler;

/// How the window can be shown on this machine.
#[derive(Clone, Copy)]
enum Display {
    /// A virtual X server per run, 1600 x 900.
    Xvfb,
    /// The `DISPLAY` this test runs under.
    Existing,
}

/// The display to run the window on, or `None` after printing why the test is skipped.
fn display() -> Option<Display> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if !ci && std::env::var_os("SWARM_SKIP_WINDOW_TEST").is_some() {
        skip("SWARM_SKIP_WINDOW_TEST is set");
        return None;
    }
    if Command::new("xvfb-run").arg("--help").output().is_ok() {
        return Some(Display::Xvfb);
    }
    if std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty()) {
        return Some(Display::Existing);
    }
    assert!(
        !ci,
        "CI=true requires the window test, but there is no xvfb-run and no DISPLAY: \
         apt-get install xvfb xauth libgl1-mesa-dri (.ci/run installs them)"
    );
    skip("no xvfb-run and no DISPLAY; apt-get install xvfb xauth libgl1-mesa-dri to run it");
    None
}

/// One line on the terminal: written to stderr directly, so the test harness does not capture it.
fn skip(why: &str) {
    let _ = writeln!(std::io::stderr().lock(), "window test skipped: {why}");
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("swarm-window-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The window's command on `display`.
fn window(display: Display) -> Command {
    match display {
        Display::Xvfb => {
            let mut command = Command::new("xvfb-run");
            command.args(["-a", "-s", "-screen 0 1600x900x24", env!("CARGO_BIN_EXE_swarm")]);
            command
        }
        Display::Existing => Command::new(env!("CARGO_BIN_EXE_swarm")),
    }
}

/// Runs the window; returns stderr.
fn shoot(display: Display, shot: &Path, assets: Option<&Path>, extra: &[&str]) -> String {
    let mut command = window(display);
    command.args(["--frames", "45"]);
    command.arg("--screenshot").arg(shot).args(extra);
    if let Some(dir) = assets {
        command.env("SWARM_ASSETS", dir);
    }
    let out = command.output().expect("the window process starts");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "window run failed ({:?}):\n{stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

struct Census {
    /// The x of every red and of every blue pixel, ascending (as many as there are such pixels).
    red_x: Vec<u32>,
    blue_x: Vec<u32>,
    overlay_text: usize,
    panel_selected: usize,
    width: u32,
}

fn look(shot: &Path) -> Census {
    let image = image::open(shot).expect("the screenshot is a PNG").to_rgba8();
    let (w, h) = image.dimensions();
    let mut census = Census { red_x: Vec::new(), blue_x: Vec::new(), overlay_text: 0, panel_selected: 0, width: w };
    for (x, y, p) in image.enumerate_pixels() {
        let [r, g, b, _] = p.0;
        let (r, g, b) = (r as i32, g as i32, b as i32);
        if r > 150 && g < 110 && b < 110 {
            census.red_x.push(x);
        }
        if b > 150 && r < 120 && b - r > 60 {
            census.blue_x.push(x);
        }
        // Overlay: light text in the top-left box.
        if x < 400 && y < 500 && r > 200 && g > 200 && b > 200 {
            census.overlay_text += 1;
        }
        // Panel: the selected backend button is amber, top right.
        if x > w - 260 && y < 200 && r > 180 && (100..180).contains(&g) && b < 80 {
            census.panel_selected += 1;
        }
    }
    let _ = h;
    census.red_x.sort_unstable();
    census.blue_x.sort_unstable();
    census
}

/// The x below which a share `q` of `xs` (ascending) lies; 0 for none.
fn quantile(xs: &[u32], q: f64) -> u32 {
    xs.get(((xs.len() as f64 * q) as usize).min(xs.len().saturating_sub(1))).copied().unwrap_or(0)
}

#[test]
fn window_runs_and_the_screenshot_shows_the_game() {
    let Some(display) = display() else { return };
    let dir = temp("shot");
    let shot = dir.join("shot.png");
    shoot(display, &shot, None, &["--entities", "3000", "--backend", "archetype", "--scenario", "armies"]);
    let seen = look(&shot);
    // Where each army's pixels lie: the x below which a tenth, half and nine tenths of them are.
    let spread = |xs: &[u32]| [0.1, 0.5, 0.9].map(|q| quantile(xs, q));
    let (red_at, blue_at) = (spread(&seen.red_x), spread(&seen.blue_x));
    eprintln!(
        "red {} (x at a tenth, half, nine tenths {red_at:?}) blue {} ({blue_at:?}) overlay text {} panel selected {}",
        seen.red_x.len(),
        seen.blue_x.len(),
        seen.overlay_text,
        seen.panel_selected
    );
    assert_eq!(seen.width, 1600, "the window opens at 1600 x 900");
    // Opaque, as the window shows it (a page behind a translucent PNG would show through the boxes).
    let image = image::open(&shot).unwrap().to_rgba8();
    assert!(image.pixels().all(|p| p.0[3] == 255), "the screenshot has translucent pixels");
    assert!(seen.red_x.len() > 2_000, "too few red sprite pixels: {}", seen.red_x.len());
    assert!(seen.blue_x.len() > 2_000, "too few blue sprite pixels: {}", seen.blue_x.len());
    // Armies start on opposite sides, red on the left and blue on the right (the camera fits the whole arena), and
    // at this frame their fronts have not met: nine tenths of the red pixels lie left of nine tenths of the blue
    // ones. (Not the means: the overlay box covers part of the red side, by an amount its text decides.)
    assert!(red_at[2] < blue_at[0], "the armies are not apart: red at x {red_at:?}, blue at x {blue_at:?}");
    assert!(seen.overlay_text > 500, "no overlay text: {}", seen.overlay_text);
    assert!(seen.panel_selected > 500, "no selected backend button in the panel: {}", seen.panel_selected);
    legend_and_key_strip(&shot);
    std::fs::remove_dir_all(dir).ok();
}

/// Every line of the overlay and the legend is drawn whole, above the key strip (a line too wide for the box goes
/// on over the next; the run warns of any line it had to cut), with the longest figures: churn at 100,000 and
/// the armies at 10,000, each after a live switch (the previous backend's figures beside the current ones).
#[test]
fn the_overlay_and_the_legend_fit_their_boxes() {
    let Some(display) = display() else { return };
    let dir = temp("fit");
    for (scenario, entities) in [("churn", "100000"), ("armies", "10000"), ("battle", "2000")] {
        let shot = dir.join(format!("{scenario}.png"));
        let stderr =
            shoot(display, &shot, None, &["--entities", entities, "--scenario", scenario, "--switch-every", "30"]);
        assert!(!stderr.contains("overlay cut"), "{scenario} {entities}: {stderr}");
        assert!(!stderr.contains("legend runs under"), "{scenario} {entities}: {stderr}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The legend box under the panel (its dark blue fill, with red and blue team samples and the yellow marker ring in
/// it), and the dark strip behind the key line, which the armies would otherwise show through.
fn legend_and_key_strip(shot: &Path) {
    let image = image::open(shot).expect("the screenshot is a PNG").to_rgba8();
    let (w, h) = image.dimensions();
    let (mut fill, mut red, mut blue, mut yellow, mut legend_px) = (0, 0, 0, 0, 0);
    // The panel is 250 px wide at 8 px from the right edge; the legend starts under it (the panel is 540 px tall).
    for y in 560..h - 60 {
        for x in w - 250..w - 12 {
            let [r, g, b, _] = image.get_pixel(x, y).0.map(i32::from);
            legend_px += 1;
            // The box: near (0.03, 0.05, 0.10) at 90 % over the game, (8, 13, 25); the arena is (17, 20, 30).
            if r <= 12 && g <= 16 && (20..=30).contains(&b) {
                fill += 1;
            }
            red += (r > 150 && g < 110 && b < 110) as u32;
            blue += (b > 150 && r < 120 && b - r > 60) as u32;
            yellow += (r > 180 && g > 170 && b < 150 && r - b > 50) as u32;
        }
    }
    eprintln!("legend: fill {fill} of {legend_px}, red {red}, blue {blue}, yellow {yellow}");
    assert!(fill * 2 > legend_px, "no legend box under the panel: {fill} of {legend_px} pixels");
    assert!(red > 20 && blue > 20, "no team samples in the legend: red {red}, blue {blue}");
    assert!(yellow > 20, "no stale-marker sample in the legend: {yellow}");
    // The key strip: the bottom 12 rows are dark but for the key text, over the whole width.
    let (mut dark, mut all) = (0, 0);
    for y in h - 12..h {
        for x in 0..w {
            let [r, g, b, _] = image.get_pixel(x, y).0.map(i32::from);
            all += 1;
            dark += (r + g + b < 45) as u32;
        }
    }
    assert!(dark * 10 > all * 6, "the key line has no dark strip: {dark} of {all} pixels dark");
}

#[test]
fn the_compare_view_runs_every_backend_and_draws_its_chart() {
    let Some(display) = display() else { return };
    let dir = temp("compare");
    let shot = dir.join("compare.png");
    // --compare opens the view after --frames frames; the screenshot waits until the comparison is done.
    shoot(display, &shot, None, &["--entities", "1500", "--compare", "--compare-frames", "15"]);
    let image = image::open(&shot).expect("the screenshot is a PNG").to_rgba8();
    let count = |rgb: u32| {
        let [want_r, want_g, want_b] = [(rgb >> 16) as i32, (rgb >> 8 & 0xff) as i32, (rgb & 0xff) as i32];
        let close = |p: &image::Rgba<u8>| {
            let [r, g, b, _] = p.0.map(i32::from);
            (r - want_r).abs() <= 3 && (g - want_g).abs() <= 3 && (b - want_b).abs() <= 3
        };
        image.pixels().filter(|p| close(p)).count()
    };
    // The first systems' colours (legend squares and bars; the chart's palette), and the bytes-per-entity bars.
    for colour in [0x4e79a7, 0xf28e2b, 0xe15759, 0x59a14f] {
        assert!(count(colour) >= 200, "colour {colour:06x}: {} pixels", count(colour));
    }
    assert!(count(0x8c8c8c) > 5_000, "bytes bars: {} pixels", count(0x8c8c8c));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn missing_and_broken_assets_fall_back_with_a_clear_message() {
    let Some(display) = display() else { return };
    let dir = temp("assets");
    let assets = dir.join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    std::fs::write(assets.join("fighter.png"), b"not a png").unwrap();
    let shot = dir.join("shot.png");
    let stderr = shoot(display, &shot, Some(&assets), &["--entities", "2000"]);
    assert!(stderr.contains("fighter.png") && stderr.contains("built-in"), "broken file not named:\n{stderr}");
    assert!(stderr.contains("hunter.png") && stderr.contains("particle.png"), "missing files not named:\n{stderr}");
    // The reasons are in words, not a Rust debug form.
    assert!(!stderr.contains("ImageError") && !stderr.contains("{ "), "{stderr}");
    let seen = look(&shot);
    assert!(seen.red_x.len() > 1_000 && seen.blue_x.len() > 1_000, "fallback sprites not drawn");
    std::fs::remove_dir_all(dir).ok();
}

/// A window run with live switches, recorded and saved on close; the headless replay of the recording reaches
/// every recorded digest and ends in the saved world. (Without --screenshot the window steps by the clock, so the
/// number of simulation frames varies from run to run: the recording holds them.)
#[test]
fn a_recorded_window_run_replays_headless_to_the_saved_world() {
    let Some(display) = display() else { return };
    let dir = temp("record");
    let (recording, saved) = (dir.join("run.jsonl"), dir.join("end.snap"));
    let out = window(display)
        .args(["--frames", "90", "--switch-every", "30", "--entities", "2000"])
        .arg("--record")
        .arg(&recording)
        .arg("--save")
        .arg(&saved)
        .output()
        .expect("the window process starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "window run failed ({:?}):\n{stderr}", out.status);
    assert!(stderr.contains("world saved to") && stderr.contains("recording written to"), "{stderr}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_swarm"))
        .arg("--headless")
        .arg("--replay")
        .arg(&recording)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "replay failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let switches: Vec<&str> = stdout.lines().filter(|l| l.contains("  backend ")).collect();
    assert_eq!(switches.len(), 2, "two live switches (frames 30 and 60) replayed:\n{stdout}");
    assert!(switches.iter().all(|l| l.ends_with(": same)")), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains("  end  ") && l.ends_with(": same)")), "{stdout}");
    assert!(!stdout.contains("DIFFERS"), "{stdout}");

    let replayed = stdout.lines().find_map(|l| l.strip_prefix("digest: ")).expect("a digest line");
    let (app, _) = swarm::sim::snapshot::load_file(&saved, None, Profiler::new()).unwrap();
    assert_eq!(replayed, format!("{:016x}", swarm::sim::digest(&app.world)), "the replay ends in the saved world");
    std::fs::remove_dir_all(dir).ok();
}

/// Two UDP ports free now (bound and released).
fn free_ports() -> (u16, u16) {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

#[test]
fn the_window_plays_a_ggrs_sync_test_and_a_peer_in_sync_with_a_headless_one() {
    let Some(display) = display() else { return };
    let dir = temp("ggrs");
    // A sync test in the window: every frame rolled back 8 and run again, no desync, the line headless prints.
    let out = window(display)
        .args(["--synctest", "8", "--frames", "40", "--entities", "2000", "--screenshot"])
        .arg(dir.join("sync.png"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("40 frames, each rolled back 8 and resimulated") && stdout.contains("no desync"),
        "{stdout}"
    );
    // Player 0 in the window (sparse set, no clicks) against player 1 headless (archetype, one thread, scripted
    // bursts): the frame asked for is confirmed on both with one digest.
    let (a, b) = free_ports();
    let common = ["--p2p", "--frames", "120", "--entities", "2000", "--timeout", "60"];
    let headless = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(["--headless", "--local-port", &a.to_string(), "--remote", &format!("127.0.0.1:{b}"), "--player", "1"])
        .args(common)
        .args(["--backend", "archetype", "--threads", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = window(display)
        .args(["--local-port", &b.to_string(), "--remote", &format!("127.0.0.1:{a}"), "--player", "0"])
        .args(common)
        .arg("--screenshot")
        .arg(dir.join("p2p.png"))
        .output()
        .unwrap();
    let other = headless.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let other_out = String::from_utf8_lossy(&other.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(other.status.success(), "{other_out}\n{}", String::from_utf8_lossy(&other.stderr));
    let digest = |text: &str| {
        text.lines().find(|l| l.contains("confirmed")).map(|l| l.rsplit("digest ").next().unwrap().to_string())
    };
    assert!(stdout.contains("p2p player 0 (sparse-set"), "{stdout}");
    assert!(stdout.contains("frame 120 confirmed"), "{stdout}");
    assert_eq!(digest(&stdout), digest(&other_out), "{stdout}\n{other_out}");
    assert!(digest(&stdout).is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stress scenario in the window: `--benchmark` steps once a frame, prints the whole frame's percentiles and the
/// digest of the headless run of the same frames, and the screenshot shows the readout (its amber title and
/// light lines in a dark box at the top, left of the panel) over waves in their tints.
#[test]
fn the_stress_window_benchmarks_to_the_headless_digest_and_shows_its_readout() {
    let Some(display) = display() else { return };
    let dir = temp("stress");
    let shot = dir.join("stress.png");
    let args = ["--scenario", "stress", "--entities", "3000", "--frames", "45"];
    let out = window(display).args(args).args(["--benchmark", "--screenshot"]).arg(&shot).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("whole frames 2-44 (present included, 43 frames): p50 "), "{stdout}");
    let headless = Command::new(env!("CARGO_BIN_EXE_swarm")).arg("--headless").args(args).output().unwrap();
    let headless = String::from_utf8_lossy(&headless.stdout);
    let digest = |text: &str| text.lines().find(|l| l.starts_with("digest: ")).map(str::to_string);
    assert_eq!(digest(&stdout), digest(&headless), "window:\n{stdout}\nheadless:\n{headless}");
    let image = image::open(&shot).unwrap().to_rgba8();
    let (w, _) = image.dimensions();
    let (mut amber, mut light, mut tinted) = (0, 0, 0);
    for (x, y, p) in image.enumerate_pixels() {
        let [r, g, b, _] = p.0.map(i32::from);
        // The readout: right of the overlay (at most 560 px wide from x 4), left of the panel, at the top. Its
        // box is as wide as its longest line, whose figures (frame times) vary from run to run.
        if x > 580 && x < w - 260 && y < 140 {
            amber += (r > 200 && (150..230).contains(&g) && b < 150) as usize;
            light += (r > 200 && g > 200 && b > 200) as usize;
        }
        // Wave tints beyond plain red and blue: orange, yellow, cyan, green.
        tinted += (g > 150 && (r > 200 || b > 200) && (r - b).abs() > 60) as usize;
    }
    eprintln!("readout: amber {amber} light {light}; tinted sprite pixels {tinted}");
    assert!(amber > 150, "no readout title: {amber}");
    // (About 800 in a quiet run; the figures' digits change the count, 573 seen under load. Without the readout,
    // the region holds a few sprites only.)
    assert!(light > 300, "no readout lines: {light}");
    assert!(tinted > 1_000, "no wave tints: {tinted}");
    std::fs::remove_dir_all(dir).ok();
}
