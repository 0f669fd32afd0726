//! Writes the sprite textures to `assets/` (or the folder given).
//!
//! `cargo run --release --bin make_assets [-- DIR]`

#![forbid(unsafe_code)]

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use swarm::art::Sprite;

/// Writes the game's sprite textures (fighter, hunter, particle) as PNG files. The window loads them from
/// `assets/`, or from the folder named by `SWARM_ASSETS`.
#[derive(Parser, Debug)]
#[command(name = "make_assets", version)]
struct Args {
    /// The folder to write into (made if missing; existing sprite files in it are replaced).
    #[arg(value_name = "DIR", default_value = "assets")]
    dir: PathBuf,
}

fn main() -> ExitCode {
    // Bad flags (`--nonsense`) exit 2 with the usage line; `--help` prints the help and exits 0.
    let args = Args::parse();
    let dir = args.dir;
    if dir.exists() && !dir.is_dir() {
        eprintln!("make_assets: {} exists and is not a folder", dir.display());
        return ExitCode::from(2);
    }
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
