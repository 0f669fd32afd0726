//! The window under Xvfb: it runs N frames, saves a screenshot and exits 0, and the picture shows sprites of both
//! teams, the overlay and the panel. A missing or broken asset falls back to the built-in art, naming the file.
//!
//! Needs `xvfb-run` (`.ci/run` installs it). Without it the test fails, unless `SWARM_SKIP_WINDOW_TEST=1` says
//! to skip on purpose.

use std::path::{Path, PathBuf};
use std::process::Command;

fn xvfb_available() -> bool {
    if Command::new("xvfb-run").arg("--help").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("SWARM_SKIP_WINDOW_TEST").is_some(),
        "xvfb-run is missing: install xvfb (see README) or set SWARM_SKIP_WINDOW_TEST=1 to skip the window test"
    );
    false
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("swarm-window-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the window; returns stderr.
fn shoot(shot: &Path, assets: Option<&Path>, extra: &[&str]) -> String {
    let mut command = Command::new("xvfb-run");
    command.args(["-a", "-s", "-screen 0 1600x900x24", env!("CARGO_BIN_EXE_swarm"), "--frames", "45"]);
    command.arg("--screenshot").arg(shot).args(extra);
    if let Some(dir) = assets {
        command.env("SWARM_ASSETS", dir);
    }
    let out = command.output().expect("xvfb-run runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "window run failed ({:?}):\n{stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

struct Census {
    red: usize,
    blue: usize,
    overlay_text: usize,
    panel_selected: usize,
    width: u32,
}

fn look(shot: &Path) -> Census {
    let image = image::open(shot).expect("the screenshot is a PNG").to_rgba8();
    let (w, h) = image.dimensions();
    let mut census = Census { red: 0, blue: 0, overlay_text: 0, panel_selected: 0, width: w };
    for (x, y, p) in image.enumerate_pixels() {
        let [r, g, b, _] = p.0;
        let (r, g, b) = (r as i32, g as i32, b as i32);
        if r > 150 && g < 110 && b < 110 {
            census.red += 1;
        }
        if b > 150 && r < 120 && b - r > 60 {
            census.blue += 1;
        }
        // Overlay: light text in the top-left box.
        if x < 400 && y < 300 && r > 200 && g > 200 && b > 200 {
            census.overlay_text += 1;
        }
        // Panel: the selected backend button is amber, top right.
        if x > w - 260 && y < 200 && r > 180 && (100..180).contains(&g) && b < 80 {
            census.panel_selected += 1;
        }
    }
    let _ = h;
    census
}

#[test]
fn window_runs_and_the_screenshot_shows_the_game() {
    if !xvfb_available() {
        return;
    }
    let dir = temp("shot");
    let shot = dir.join("shot.png");
    shoot(&shot, None, &["--entities", "3000", "--backend", "archetype"]);
    let seen = look(&shot);
    eprintln!(
        "red {} blue {} overlay text {} panel selected {}",
        seen.red, seen.blue, seen.overlay_text, seen.panel_selected
    );
    assert_eq!(seen.width, 1600, "the window opens at 1600 x 900");
    assert!(seen.red > 2_000, "too few red sprite pixels: {}", seen.red);
    assert!(seen.blue > 2_000, "too few blue sprite pixels: {}", seen.blue);
    assert!(seen.overlay_text > 500, "no overlay text: {}", seen.overlay_text);
    assert!(seen.panel_selected > 500, "no selected backend button in the panel: {}", seen.panel_selected);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn missing_and_broken_assets_fall_back_with_a_clear_message() {
    if !xvfb_available() {
        return;
    }
    let dir = temp("assets");
    let assets = dir.join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    std::fs::write(assets.join("fighter.png"), b"not a png").unwrap();
    let shot = dir.join("shot.png");
    let stderr = shoot(&shot, Some(&assets), &["--entities", "2000"]);
    assert!(stderr.contains("fighter.png") && stderr.contains("built-in"), "broken file not named:\n{stderr}");
    assert!(stderr.contains("hunter.png") && stderr.contains("particle.png"), "missing files not named:\n{stderr}");
    let seen = look(&shot);
    assert!(seen.red > 1_000 && seen.blue > 1_000, "fallback sprites not drawn");
    std::fs::remove_dir_all(dir).ok();
}
