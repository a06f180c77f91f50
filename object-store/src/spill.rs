//! Spill files: where spilled objects go, and the IO that moves them. Runs on the
//! raylet's spill thread (writes) and on the requesting connection's thread (restores),
//! never under the raylet's lock.
//!
//! Files are spread round-robin over the spill directories, each in a per-session
//! subdirectory `ares-spill-<pid>-<tag>` (mode 0700) that is removed at shutdown, and by
//! the next node on the machine if its process died. Small objects are fused into one
//! file per [`SpillJob`]. Each file is unlinked as soon as it is written and kept open:
//! its space is returned when its last object is deleted (the descriptor is closed), and
//! no exit, SIGKILL included, can leave spill data behind.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hashbrown::HashMap;

use crate::index::{FileId, RestoreJob, SpillJob};
use crate::pool::Pool;
use crate::slot::SlotState;

/// The spill directories of one node.
#[derive(Debug)]
pub struct SpillDirs {
    dirs: Vec<PathBuf>,
    open: Mutex<HashMap<FileId, Arc<File>>>,
    /// Closing the last descriptor of a large unlinked file frees its pages, which can
    /// take milliseconds: a closer thread does it, never the caller (who holds the
    /// raylet's lock).
    closer: Mutex<std::sync::mpsc::Sender<Arc<File>>>,
}

impl SpillDirs {
    /// Uses `<dir>/ares-spill-<tag>` under each of `roots` (made now, mode 0700).
    pub fn new(roots: &[PathBuf], tag: &str) -> io::Result<SpillDirs> {
        if roots.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no spill directory configured"));
        }
        let mut dirs = Vec::new();
        for r in roots {
            remove_stale(r);
            let d = r.join(format!("ares-spill-{}-{tag}", std::process::id()));
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot create spill directory {}: {e}", d.display())))?;
            dirs.push(d);
        }
        let (tx, rx) = std::sync::mpsc::channel::<Arc<File>>();
        std::thread::Builder::new().name("ares-spill-closer".into()).spawn(move || {
            // Each received file is dropped (closed) here; ends when the sender is dropped.
            for file in rx {
                drop(file);
            }
        })?;
        Ok(SpillDirs { dirs, open: Mutex::new(HashMap::new()), closer: Mutex::new(tx) })
    }

    /// The path of spill file `file` (round-robin over the directories).
    pub fn path(&self, file: FileId) -> PathBuf {
        self.dirs[(file.0 as usize) % self.dirs.len()].join(format!("spill-{:08}.bin", file.0))
    }

    /// Writes the job's objects into a new file. Returns each item's offset
    /// in the file. Items whose spill was cancelled (a reader pinned them) are skipped;
    /// their offsets are never used.
    pub fn write(&self, pool: &Pool, job: &SpillJob) -> Result<Vec<u64>, String> {
        let path = self.path(job.file);
        let fail = |e: io::Error| format!("spilling to {} failed: {e}", path.display());
        let mut f = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path).map_err(fail)?;
        let mut offsets = Vec::with_capacity(job.items.len());
        let mut pos = 0u64;
        let result = (|| {
            for item in &job.items {
                offsets.push(pos);
                if item.slot.state() != SlotState::Spilling {
                    continue;
                }
                // SAFETY: the job holds the object: its memory is not released or reused
                // until the job ends, and sealed bytes are never written.
                let bytes = unsafe { pool.slice(item.offset, item.size) }?;
                f.write_all(bytes)?;
                pos += item.size;
            }
            // No fsync: the file is unlinked below and dies with the node anyway (Ray does
            // not sync spill files either); restores read it back through the page cache.
            Ok(())
        })();
        // Unlinked at once either way: the open descriptor is the file from now on.
        let _ = std::fs::remove_file(&path);
        result.map_err(fail)?;
        self.open.lock().unwrap_or_else(|p| p.into_inner()).insert(job.file, Arc::new(f));
        Ok(offsets)
    }

    /// Reads a spilled object back into its new place in the pool.
    pub fn read(&self, pool: &Pool, job: &RestoreJob) -> io::Result<()> {
        let f = self.open.lock().unwrap_or_else(|p| p.into_inner()).get(&job.file).cloned().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("spill file {} is not open", self.path(job.file).display()))
        })?;
        // SAFETY: `begin_restore` allocated this range for the object; nobody else can
        // pin or write it until `finish_restore`.
        let dst = unsafe { pool.slice_mut(job.pool_offset, job.size) }?;
        f.read_exact_at(dst, job.file_offset)
    }

    /// Deletes a spill file whose objects are all gone.
    pub fn remove(&self, file: FileId) {
        let f = self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&file);
        if let Some(f) = f {
            let _ = self.closer.lock().unwrap_or_else(|p| p.into_inner()).send(f);
        }
    }

    /// Removes the per-session directories and whatever is left in them.
    pub fn remove_all(&self) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).clear();
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Removes `ares-spill-<pid>-*` directories under `root` whose process is gone (left by
/// a daemon killed with SIGKILL).
pub fn remove_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("ares-spill-")) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !ares_common::process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn files_go_round_robin_over_the_dirs_and_stale_dirs_are_collected() {
        let root = std::env::temp_dir().join(format!("ares-spill-unit-{}", std::process::id()));
        let (a, b) = (root.join("a"), root.join("b"));
        // A leftover of a process that cannot exist (above any pid_max).
        std::fs::create_dir_all(a.join("ares-spill-999999999-dead")).unwrap();
        let dirs = SpillDirs::new(&[a.clone(), b.clone()], "t").unwrap();
        assert!(!a.join("ares-spill-999999999-dead").exists(), "stale spill dir collected");
        let p1 = dirs.path(FileId(1));
        let p2 = dirs.path(FileId(2));
        assert_ne!(p1.parent(), p2.parent());
        assert!(p1.starts_with(&root) && p2.starts_with(&root));
        dirs.remove_all();
        assert!(std::fs::read_dir(&a).unwrap().next().is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
