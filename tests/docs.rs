//! The pages say what the code is: the module map in docs/ARCHITECTURE.md names every source file, every test and
//! every bench (and nothing that is gone), the crates the library needs are the ones it names, and the simulation's
//! frame there is the schedule's order, stage by stage and group by group; README.md stays within 10 KB and its map
//! names real folders.

use std::collections::BTreeSet;
use std::path::Path;
use swarm::app::Stage;
use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig};

fn architecture() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md")).unwrap()
}

/// The first code block after the line starting with `heading`.
fn block_after(page: &str, heading: &str) -> String {
    let start = page.find(heading).unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}`"));
    let rest = &page[start..];
    let open = rest.find("```\n").expect("a code block") + 4;
    let close = rest[open..].find("```").expect("the block's end") + open;
    rest[open..close].to_string()
}

/// The words of `text`: runs of letters, digits and underscores.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// The `.rs` files under `dir` (recursively), as paths relative to the crate.
fn rust_files(dir: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// How the map names a file: its stem, or for a `mod.rs` its folder's name.
fn name_in_map(path: &str) -> String {
    let path = Path::new(path);
    let stem = path.file_stem().unwrap().to_string_lossy().to_string();
    if stem == "mod" || stem == "main" && path.parent().is_some_and(|p| p.ends_with("conformance")) {
        path.parent().unwrap().file_name().unwrap().to_string_lossy().to_string()
    } else {
        stem
    }
}

#[test]
fn the_module_map_names_every_source_test_and_bench_file() {
    let map = block_after(&architecture(), "## 1. Module map");
    let named = words(&map);
    let mut missing = Vec::new();
    for dir in ["src", "tests", "benches", "derive/src"] {
        for file in rust_files(dir) {
            // A test's own modules (tests/conformance/*.rs, tests/derive_fail/*.rs) go under their folder's name.
            let inside_a_test = file.starts_with("tests/") && file.matches('/').count() > 1;
            let name = if inside_a_test { file.split('/').nth(1).unwrap().to_string() } else { name_in_map(&file) };
            if !named.contains(&name) {
                missing.push(file);
            }
        }
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md's module map does not name {missing:?}");
}

#[test]
fn the_module_maps_test_and_bench_lists_name_only_what_exists() {
    let map = block_after(&architecture(), "## 1. Module map");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (folder, line_start) in [("tests", "tests/ "), ("benches", "benches/ ")] {
        // The entry runs from its line to the next unindented line.
        let start = map.find(line_start).unwrap_or_else(|| panic!("the map has no `{line_start}` entry"));
        let entry: String = map[start + line_start.len()..]
            .lines()
            .enumerate()
            .take_while(|(k, line)| *k == 0 || line.starts_with(' '))
            .map(|(_, line)| line.to_string() + "\n")
            .collect();
        // Every name the entry gives as a file (`x.rs`) or a folder (`x/`) exists.
        for name in entry.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '(' || c == ')') {
            let name = name.trim_end_matches([':', '.']);
            let path = match (name.strip_suffix(".rs"), name.strip_suffix('/')) {
                (Some(_), _) => root.join(folder).join(name),
                (_, Some(dir)) if !dir.is_empty() => root.join(folder).join(dir),
                _ => continue,
            };
            assert!(path.exists(), "the map's `{folder}/` entry names `{name}`, which is not in {folder}/");
        }
    }
    // The tests entry is a list: each name (descriptions in parentheses aside) is a test file or folder.
    let start = map.find("tests/ ").expect("the map's tests entry");
    let mut entry = String::new();
    let mut depth = 0;
    for c in map[start + "tests/ ".len()..].lines().take_while(|l| !l.is_empty()).collect::<Vec<_>>().join(" ").chars()
    {
        depth += (c == '(') as i32 - (c == ')') as i32;
        if depth == 0 && c != ')' {
            entry.push(c);
        }
    }
    let listed: Vec<&str> = entry.split([',', ';']).map(str::trim).filter(|n| !n.is_empty()).collect();
    assert!(listed.len() > 10, "the tests entry lists its files: {listed:?}");
    for name in listed {
        let base = name.trim_end_matches('/').trim_end_matches(".rs");
        let exists = root.join("tests").join(format!("{base}.rs")).exists() || root.join("tests").join(base).is_dir();
        assert!(exists, "the map's tests/ entry names `{name}`, which is not in tests/");
    }
}

#[test]
fn the_crates_the_library_needs_are_the_ones_the_page_names() {
    let page = architecture();
    let start = page.find("on these crates:").expect("ARCHITECTURE.md names the library's crates") + 16;
    let end = page[start..].find('.').expect("the list's end") + start;
    let named: BTreeSet<String> = page[start..end].split(',').map(|c| c.trim().to_string()).collect();
    // Cargo.toml's [dependencies] that are not optional (the window feature's are).
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let section = manifest.split("\n[dependencies]\n").nth(1).expect("a [dependencies] section");
    let section = section.split("\n[").next().unwrap();
    let needed: BTreeSet<String> = section
        .lines()
        .filter(|line| !line.starts_with('#') && line.contains('=') && !line.contains("optional = true"))
        .map(|line| line.split('=').next().unwrap().trim().to_string())
        .collect();
    assert_eq!(named, needed, "ARCHITECTURE.md's crates of the library without `window`, then Cargo.toml's");
}

#[test]
fn the_frame_on_the_page_is_the_schedules_order() {
    let frame = block_after(&architecture(), "**The simulation's frame.**");
    let config = SimConfig::default();
    let app = build_app(config.clone(), 1, Backend::SparseSet, config.default_capacity());
    // The page: each stage's name, then its groups' names and systems' names, indented, in order.
    let stages = [("PreUpdate", Stage::PreUpdate), ("Update", Stage::Update), ("PostUpdate", Stage::PostUpdate)];
    let mut on_page: Vec<(String, Vec<String>)> = Vec::new();
    for line in frame.lines() {
        let mut cells = line.split_whitespace();
        let Some(first) = cells.next() else { continue };
        if line.starts_with(' ') && line.chars().nth(1).is_some_and(|c| c != ' ') {
            // ` Stage   group` or ` Last   system   what it does`
            on_page.push((first.to_string(), cells.next().into_iter().map(str::to_string).collect()));
        } else if line.starts_with("             ") && !line.starts_with("              ") {
            on_page.last_mut().expect("a stage first").1.push(first.to_string());
        }
    }
    for (name, stage) in stages {
        let listed = &on_page.iter().find(|(s, _)| s == name).unwrap_or_else(|| panic!("no {name} on the page")).1;
        // The schedule: each group's name before its systems, in run order.
        let mut expected = Vec::new();
        let mut group = None;
        for system in app.system_names(stage) {
            let of = app.groups().find(|g| g.stage == stage && g.systems.contains(&system)).map(|g| g.name);
            if of != group {
                expected.extend(of.map(str::to_string));
                group = of;
            }
            expected.push(system.to_string());
        }
        assert_eq!(listed, &expected, "ARCHITECTURE.md's frame, {name}: the page, then the schedule");
    }
    let last = &on_page.iter().find(|(s, _)| s == "Last").expect("Last on the page").1;
    assert_eq!(last, &app.system_names(Stage::Last).map(str::to_string).collect::<Vec<_>>(), "Last");
}

#[test]
fn the_readme_is_a_short_page_whose_map_names_real_folders() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.len() <= 10 * 1024, "README.md is {} bytes; a product page stays within 10 KB", readme.len());
    let map = block_after(&readme, "## How it is built");
    let folders: Vec<&str> = map
        .lines()
        .filter(|line| !line.starts_with(char::is_whitespace))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(folders.len() >= 5, "the README's map lists its folders: {folders:?}");
    for folder in folders {
        assert!(
            folder.ends_with('/') && root.join(folder).is_dir(),
            "README's map names `{folder}`, not a folder here"
        );
    }
}
