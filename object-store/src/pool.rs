//! The shared-memory pool: a file created in /dev/shm, unlinked at once (so that no file
//! survives any kind of exit, SIGKILL included), and reopened by other processes of the
//! node through `/proc/<pid>/fd/<fd>` of the process that made it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use memmap2::{MmapOptions, MmapRaw};
use rustix::fs::{Mode, OFlags};

/// A mapping of a node's pool. Offsets in messages are relative to its start.
pub struct Pool {
    map: MmapRaw,
    /// Keeps the (unlinked) file alive while the pool is mapped and lets others reopen it.
    file: File,
    size: u64,
    /// The directory the pool was made in (for error messages).
    dir: std::path::PathBuf,
}

impl Pool {
    /// Creates a pool of `size` bytes in `dir` (normally /dev/shm). The file is unlinked
    /// before this returns; [`Pool::reopen_path`] is how other processes reach it.
    pub fn create(dir: &Path, tag: &str, size: u64) -> io::Result<Pool> {
        // A pool the filesystem cannot hold would fail later, as a SIGBUS in whichever
        // process first touches a page past the end of the free space.
        let fs = rustix::fs::statvfs(dir).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the shared-memory directory {} cannot hold the object store ({e}); \
                     give an existing memory-backed directory as shm_dir (--shm-dir, ARES_SHM_DIR)",
                    dir.display()
                ),
            )
        })?;
        let free = fs.f_bavail.saturating_mul(fs.f_frsize);
        if size > free {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "an object store of {size} bytes does not fit in {}, which has {free} bytes free; \
                     give a smaller object_store_memory (--object-store-memory, ARES_OBJECT_STORE_MEMORY) \
                     or make {} larger",
                    dir.display(),
                    dir.display()
                ),
            ));
        }
        let path = dir.join(format!("ares-{}-{tag}-pool", std::process::id()));
        let fd = rustix::fs::open(
            &path,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        // Unlink first: from here on no exit path can leave the file behind.
        let unlinked = rustix::fs::unlink(&path);
        let file = File::from(fd);
        unlinked?;
        file.set_len(size)?;
        let map = MmapOptions::new().len(size as usize).map_raw(&file)?;
        Ok(Pool { map, file, size, dir: dir.to_path_buf() })
    }

    /// Reserves the filesystem's pages for `[offset, offset + len)` (`fallocate`), so a
    /// write there can never fault for want of memory. Fails, naming the directory,
    /// when the filesystem is full. A filesystem that cannot reserve (no `fallocate`)
    /// counts as reserved: there the pages come at first write, as before.
    pub fn reserve(&self, offset: u64, len: u64) -> io::Result<()> {
        self.check(offset, len)?;
        // In steps: a signal (Ctrl-C in a Python driver) interrupts a call, tmpfs undoes
        // that call's work, and it is tried again; a step bounds what is redone.
        const STEP: u64 = 256 << 20;
        let mut done = 0;
        let reserved = loop {
            if done >= len {
                break Ok(());
            }
            let (at, n) = (offset + done, STEP.min(len - done));
            let step = || rustix::fs::fallocate(&self.file, rustix::fs::FallocateFlags::empty(), at, n);
            match rustix::io::retry_on_intr(step) {
                Ok(()) => done += n,
                Err(e) => break Err(e),
            }
        };
        match reserved {
            Ok(()) => Ok(()),
            Err(rustix::io::Errno::OPNOTSUPP) => Ok(()),
            Err(e) => Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "the shared-memory filesystem {} has no room for {len} more bytes of the object store ({e}); \
                     free space there (other programs' files) or give a smaller object_store_memory",
                    self.dir.display()
                ),
            )),
        }
    }

    /// Maps `[offset, offset + len)` writable into this process's page tables in one
    /// call (`MADV_POPULATE_WRITE`), before a large write: one fault per 4 KiB page
    /// costs about 2 µs on a VM, several times the batch's cost. Best effort: a kernel
    /// without it (before 5.14), or a range not reserved, is left to fault as before.
    pub fn populate_write(&self, offset: u64, len: u64) {
        let Ok(start) = self.check(offset, len) else { return };
        let page = rustix::param::page_size();
        let (lo, hi) = (start / page * page, (start + len as usize).div_ceil(page) * page);
        let hi = hi.min(self.size as usize);
        if hi <= lo {
            return;
        }
        // SAFETY: the range lies inside our mapping; populating only faults its pages in,
        // it changes no byte.
        let _ = unsafe {
            rustix::mm::madvise(self.map.as_mut_ptr().add(lo).cast(), hi - lo, rustix::mm::Advice::LinuxPopulateWrite)
        };
    }

    /// Opens a pool made by another process of this node.
    pub fn open(path: &str, size: u64) -> io::Result<Pool> {
        let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
        let actual = file.metadata()?.len();
        if actual != size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("pool {path} has {actual} bytes, expected {size}"),
            ));
        }
        let map = MmapOptions::new().len(size as usize).map_raw(&file)?;
        Ok(Pool { map, file, size, dir: path.into() })
    }

    /// The path through which another process of this node opens the pool.
    pub fn reopen_path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.file.as_raw_fd())
    }

    /// Pool size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn check(&self, offset: u64, len: u64) -> io::Result<usize> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(offset as usize),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("range {offset}+{len} is outside the pool of {} bytes", self.size),
            )),
        }
    }

    /// The bytes of a sealed object.
    ///
    /// # Safety
    /// The range must belong to a sealed object that stays allocated while the slice is
    /// used (its owner holds it), so no process writes to it meanwhile.
    pub unsafe fn slice(&self, offset: u64, len: u64) -> io::Result<&[u8]> {
        let start = self.check(offset, len)?;
        // SAFETY: in bounds (checked); immutability is the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(start), len as usize) })
    }

    /// The bytes of an object being created.
    ///
    /// # Safety
    /// The range must be an allocation this process created and has not sealed, so no
    /// other slice of it exists anywhere.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, offset: u64, len: u64) -> io::Result<&mut [u8]> {
        let start = self.check(offset, len)?;
        // SAFETY: in bounds (checked); exclusivity is the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(start), len as usize) })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn create_leaves_no_file_and_reopen_shares_bytes() {
        let tag = format!("unit{}", std::process::id());
        let pool = Pool::create(Path::new("/dev/shm"), &tag, 1 << 20).unwrap();
        let leftover =
            std::fs::read_dir("/dev/shm").unwrap().flatten().any(|e| e.file_name().to_string_lossy().contains(&tag));
        assert!(!leftover, "pool file must be unlinked at once");
        unsafe { pool.slice_mut(4096, 4).unwrap() }.copy_from_slice(b"ares");
        let other = Pool::open(&pool.reopen_path(), 1 << 20).unwrap();
        assert_eq!(unsafe { other.slice(4096, 4).unwrap() }, b"ares");
        assert!(unsafe { other.slice(1 << 20, 1) }.is_err());
        assert!(unsafe { other.slice(u64::MAX, 2) }.is_err());
        assert!(Pool::open(&pool.reopen_path(), 2 << 20).is_err());
        let e = Pool::create(Path::new("/nonexistent-ares-shm"), &tag, 1 << 20).err().expect("no such directory");
        assert!(e.to_string().contains("/nonexistent-ares-shm") && e.to_string().contains("shm_dir"), "{e}");
    }

    #[test]
    fn reserving_gives_pages_backing_and_refuses_ranges_outside() {
        let pool = Pool::create(Path::new("/dev/shm"), &format!("reserve{}", std::process::id()), 4 << 20).unwrap();
        let blocks = |p: &Pool| rustix::fs::fstat(&p.file).unwrap().st_blocks;
        assert_eq!(blocks(&pool), 0, "a new pool is sparse");
        pool.reserve(2 << 20, 2 << 20).unwrap();
        assert_eq!(blocks(&pool) * 512, 2 << 20, "exactly the reserved range is backed");
        assert!(pool.reserve(3 << 20, 2 << 20).is_err());
        assert!(pool.reserve(u64::MAX, 2).is_err());
    }
}
