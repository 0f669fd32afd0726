//! Writes the sprite textures to `assets/` (or the folder given as the first argument).
//!
//! `cargo run --release --bin make_assets`

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use swarm::art::Sprite;

fn main() -> ExitCode {
    let dir = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("assets"));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("make_assets: cannot create {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    for sprite in Sprite::ALL {
        let path = dir.join(sprite.file_name());
        let n = sprite.size();
        if let Err(error) = image::save_buffer(&path, &sprite.pixels(), n, n, image::ColorType::Rgba8) {
            eprintln!("make_assets: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
