//! The quick slot (F5 saves, F9 loads): a snapshot kept in memory and in a file, so F9 also works the next time
//! the window runs. No macroquad here: the window shows the messages these functions write.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How long a message stays on screen, in seconds.
pub const MESSAGE_SECONDS: f32 = 2.5;

/// The quick slot's file: `$XDG_DATA_HOME/swarm/quicksave.snap`, else `$HOME/.local/share/swarm/quicksave.snap`;
/// `None` when neither variable is set. (A relative `XDG_DATA_HOME` is ignored, as the XDG spec says.)
pub fn path_from(xdg_data_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let xdg = xdg_data_home.map(PathBuf::from).filter(|p| p.is_absolute());
    let data = xdg.or_else(|| home.filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("swarm").join("quicksave.snap"))
}

/// [`path_from`] this process's environment.
pub fn path() -> Option<PathBuf> {
    path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

/// The slot: the last quick save of this run of the window, and the file that keeps it between runs.
pub struct QuickSlot {
    bytes: Option<Vec<u8>>,
    path: Option<PathBuf>,
}

impl QuickSlot {
    /// An empty slot backed by `path` (none: memory only).
    pub fn new(path: Option<PathBuf>) -> Self {
        Self { bytes: None, path }
    }

    /// Keeps `bytes` (a snapshot of the world at simulation frame `frame`) and writes them to the file; returns
    /// the message to show. A file that cannot be written is reported, and the slot is kept in memory all the same.
    pub fn save(&mut self, bytes: Vec<u8>, frame: u64) -> String {
        let written = match &self.path {
            Some(path) => write(path, &bytes),
            None => Err("no XDG_DATA_HOME or HOME to keep it in".to_string()),
        };
        let message = save_message(bytes.len(), frame, written);
        self.bytes = Some(bytes);
        message
    }

    /// The snapshot in the slot: this run of the window's, else the file's from an earlier run.
    pub fn get(&self) -> Result<Vec<u8>, String> {
        if let Some(bytes) = &self.bytes {
            return Ok(bytes.clone());
        }
        match &self.path {
            Some(path) if path.exists() => {
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
            }
            _ => Err("no quick save yet (F5 saves one)".to_string()),
        }
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    }
    swarm::files::write_whole(path, |temp| std::fs::write(temp, bytes).map_err(|e| e.to_string()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A size for people: bytes below 10 KB, else KB.
fn size(bytes: usize) -> String {
    if bytes < 10 * 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{} KB", (bytes + 512) / 1024)
    }
}

/// The message after a quick save of `bytes` bytes at simulation frame `frame`; `written` says whether the file
/// was written.
pub fn save_message(bytes: usize, frame: u64, written: Result<(), String>) -> String {
    match written {
        Ok(()) => format!("quick save: {}, frame {frame}", size(bytes)),
        Err(why) => format!("quick save: {}, frame {frame}, in memory only ({why})", size(bytes)),
    }
}

/// The message after a quick load: the frame loaded, or why nothing changed.
pub fn load_message(loaded: Result<u64, String>) -> String {
    match loaded {
        Ok(frame) => format!("quick load: frame {frame}"),
        Err(why) => format!("quick load failed: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_follows_xdg_then_home() {
        let p = |x: Option<&str>, h: Option<&str>| path_from(x.map(Into::into), h.map(Into::into));
        assert_eq!(p(Some("/data"), Some("/home/a")), Some(PathBuf::from("/data/swarm/quicksave.snap")));
        assert_eq!(p(None, Some("/home/a")), Some(PathBuf::from("/home/a/.local/share/swarm/quicksave.snap")));
        assert_eq!(
            p(Some("relative"), Some("/home/a")),
            Some(PathBuf::from("/home/a/.local/share/swarm/quicksave.snap"))
        );
        assert_eq!(p(None, None), None);
    }

    #[test]
    fn messages_say_what_happened() {
        assert_eq!(save_message(421_888, 1234, Ok(())), "quick save: 412 KB, frame 1234");
        assert_eq!(save_message(900, 7, Ok(())), "quick save: 900 bytes, frame 7");
        let failed = save_message(421_888, 1234, Err("cannot write /x: denied".into()));
        assert!(failed.contains("in memory only") && failed.contains("denied"), "{failed}");
        assert_eq!(load_message(Ok(99)), "quick load: frame 99");
        assert_eq!(
            load_message(Err("truncated snapshot: 3 bytes".into())),
            "quick load failed: truncated snapshot: 3 bytes"
        );
    }

    #[test]
    fn the_slot_survives_the_session_in_its_file_and_in_memory_without_it() {
        let dir = std::env::temp_dir().join(format!("swarm-quick-{}", std::process::id()));
        let file = dir.join("deep/swarm/quicksave.snap");
        let mut slot = QuickSlot::new(Some(file.clone()));
        assert!(slot.get().unwrap_err().contains("no quick save yet"));
        assert!(slot.save(b"snap".to_vec(), 3).starts_with("quick save: 4 bytes"));
        assert_eq!(QuickSlot::new(Some(file.clone())).get().unwrap(), b"snap", "the next run reads the file");
        // A folder that cannot be made: the message says so, and F9 still has the slot.
        std::fs::write(dir.join("blocker"), b"").unwrap();
        let mut stuck = QuickSlot::new(Some(dir.join("blocker/swarm/quicksave.snap")));
        let message = stuck.save(b"kept".to_vec(), 5);
        assert!(message.contains("in memory only") && message.contains("blocker"), "{message}");
        assert_eq!(stuck.get().unwrap(), b"kept");
        std::fs::remove_dir_all(dir).ok();
    }
}
