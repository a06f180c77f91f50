//! Spill files: where spilled objects go, and the IO that moves them. Runs on the
//! raylet's spill thread (writes) and on the requesting connection's thread (restores),
//! never under the raylet's lock.
//!
//! Files are spread round-robin over the spill directories, each in a per-session
//! subdirectory (mode 0700) that is removed at shutdown. Small objects are fused into one
//! file per [`SpillJob`]; a file is deleted when its last object is.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::index::{FileId, RestoreJob, SpillJob};
use crate::pool::Pool;
use crate::slot::SlotState;

/// The spill directories of one node.
#[derive(Debug)]
pub struct SpillDirs {
    dirs: Vec<PathBuf>,
}

impl SpillDirs {
    /// Uses `<dir>/ares-spill-<tag>` under each of `roots` (made now, mode 0700).
    pub fn new(roots: &[PathBuf], tag: &str) -> io::Result<SpillDirs> {
        if roots.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no spill directory configured"));
        }
        let mut dirs = Vec::new();
        for r in roots {
            let d = r.join(format!("ares-spill-{tag}"));
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot create spill directory {}: {e}", d.display())))?;
            dirs.push(d);
        }
        Ok(SpillDirs { dirs })
    }

    /// The per-session directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The path of spill file `file` (round-robin over the directories).
    pub fn path(&self, file: FileId) -> PathBuf {
        self.dirs[(file.0 as usize) % self.dirs.len()].join(format!("spill-{:08}.bin", file.0))
    }

    /// Writes the job's objects into a new file and syncs it. Returns each item's offset
    /// in the file. Items whose spill was cancelled (a reader pinned them) are skipped;
    /// their offsets are never used.
    pub fn write(&self, pool: &Pool, job: &SpillJob) -> Result<Vec<u64>, String> {
        let path = self.path(job.file);
        let fail = |e: io::Error| format!("spilling to {} failed: {e}", path.display());
        let mut f = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).map_err(fail)?;
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
            f.sync_all()
        })();
        if let Err(e) = result {
            drop(f);
            let _ = std::fs::remove_file(&path);
            return Err(fail(e));
        }
        Ok(offsets)
    }

    /// Reads a spilled object back into its new place in the pool.
    pub fn read(&self, pool: &Pool, job: &RestoreJob) -> io::Result<()> {
        let path = self.path(job.file);
        let f = File::open(&path)?;
        // SAFETY: `begin_restore` allocated this range for the object; nobody else can
        // pin or write it until `finish_restore`.
        let dst = unsafe { pool.slice_mut(job.pool_offset, job.size) }?;
        f.read_exact_at(dst, job.file_offset)
    }

    /// Deletes a spill file whose objects are all gone.
    pub fn remove(&self, file: FileId) {
        let path = self.path(file);
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!("could not delete spill file {}: {e}", path.display());
        }
    }

    /// Removes the per-session directories and whatever is left in them.
    pub fn remove_all(&self) {
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
