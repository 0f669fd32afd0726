//! Output files (a screenshot, a trace): checked before a run starts, and written whole or not at all.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

/// Checks that `path` can take an output file, without leaving anything behind: its extension is one of
/// `extensions` (case-insensitive; any if empty), it is not a directory, its folder exists, and a file can be
/// created there. The message says what is wrong (the caller names the flag).
pub fn check_writable(path: &Path, extensions: &[&str]) -> Result<(), String> {
    if !extensions.is_empty() {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if !ext.is_some_and(|ext| extensions.contains(&ext.as_str())) {
            let want: Vec<String> = extensions.iter().map(|e| format!(".{e}")).collect();
            return Err(format!("{} must end in {}", path.display(), want.join(" or ")));
        }
    }
    if path.is_dir() {
        return Err(format!("{} is a directory; give a file name", path.display()));
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!("folder {} does not exist", folder.display()));
    }
    // Try it: a file that was not there before is removed again, and an existing one is opened without truncation.
    let existed = path.exists();
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if !existed {
        std::fs::remove_file(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// A sibling of `path` to write first and rename over it, so a failed write leaves neither an empty nor a partial
/// file. It keeps the extension (encoders choose the format by it).
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("output");
    path.with_file_name(format!(".{}.{name}", std::process::id()))
}

/// Writes `path` through [`temp_sibling`]: `write` fills the temporary file, which then replaces `path`. On any
/// failure the temporary file is removed and `path` is left as it was.
pub fn write_whole(path: &Path, write: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), String> {
    let temp = temp_sibling(path);
    let result = write(&temp).and_then(|()| std::fs::rename(&temp, path).map_err(|e| e.to_string()));
    if result.is_err() {
        std::fs::remove_file(&temp).ok();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_problem_and_leave_nothing() {
        let dir = std::env::temp_dir().join(format!("swarm-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("shot.png");
        assert_eq!(check_writable(&ok, &["png"]), Ok(()));
        assert!(!ok.exists(), "the check left a file behind");
        assert!(check_writable(&dir.join("shot.jpg"), &["png"]).unwrap_err().contains("must end in .png"));
        assert!(check_writable(&dir.join("SHOT.PNG"), &["png"]).is_ok());
        assert!(check_writable(&dir, &[]).unwrap_err().contains("is a directory"));
        assert!(check_writable(&dir.join("no/such/t.json"), &["json"]).unwrap_err().contains("does not exist"));
        std::fs::write(&ok, b"keep").unwrap();
        assert_eq!(check_writable(&ok, &["png"]), Ok(()));
        assert_eq!(std::fs::read(&ok).unwrap(), b"keep", "an existing file is not truncated by the check");
        let failed = write_whole(&ok, |temp| {
            std::fs::write(temp, b"half").unwrap();
            Err("encoder failed".into())
        });
        assert_eq!(failed, Err("encoder failed".into()));
        assert_eq!(std::fs::read(&ok).unwrap(), b"keep");
        assert!(!temp_sibling(&ok).exists(), "the temporary file was removed");
        write_whole(&ok, |temp| std::fs::write(temp, b"new").map_err(|e| e.to_string())).unwrap();
        assert_eq!(std::fs::read(&ok).unwrap(), b"new");
        std::fs::remove_dir_all(dir).ok();
    }
}
