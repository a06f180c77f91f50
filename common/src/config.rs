//! Runtime configuration of a node and of the processes on it.

use std::path::PathBuf;

/// Results at most this large return inline to the owner (Ray's default: 100 KiB).
pub const DEFAULT_MAX_INLINE_BYTES: usize = 100 << 10;

/// Settings for `ares::init_with` and the raylet. `Default` gives the embedded one-node
/// cluster a laptop user expects.
#[derive(Clone, Debug)]
pub struct Config {
    /// CPUs the node offers; `None` means the machine's available parallelism.
    pub num_cpus: Option<u32>,
    /// Custom resources the node offers, such as `("GPU", 1.0)`.
    pub resources: Vec<(String, f64)>,
    /// Size of the shared-memory pool in bytes; `None` means 30% of RAM, capped by the
    /// free space of /dev/shm.
    pub object_store_memory: Option<u64>,
    /// Largest value kept inline (in the owner's memory) rather than in shared memory.
    pub max_inline_bytes: usize,
    /// Largest frame accepted on any socket.
    pub max_frame_bytes: usize,
    /// Where session directories (sockets) are made.
    pub session_root: PathBuf,
    /// Tasks pushed to one leased worker before the owner waits for replies.
    pub max_tasks_in_flight_per_worker: u32,
    /// Worker processes started at most; `None` means one per CPU.
    pub max_workers: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            num_cpus: None,
            resources: Vec::new(),
            object_store_memory: None,
            max_inline_bytes: DEFAULT_MAX_INLINE_BYTES,
            max_frame_bytes: crate::frame::DEFAULT_MAX_FRAME,
            session_root: std::env::temp_dir().join("ares"),
            max_tasks_in_flight_per_worker: 64,
            max_workers: None,
        }
    }
}

impl Config {
    /// Sets the node's CPU count.
    pub fn num_cpus(mut self, n: u32) -> Self {
        self.num_cpus = Some(n);
        self
    }

    /// Adds a custom resource to the node.
    pub fn resource(mut self, name: &str, amount: f64) -> Self {
        self.resources.push((name.to_string(), amount));
        self
    }

    /// Sets the pool size in bytes.
    pub fn object_store_memory(mut self, bytes: u64) -> Self {
        self.object_store_memory = Some(bytes);
        self
    }

    /// The node's CPU count after defaults.
    pub fn effective_num_cpus(&self) -> u32 {
        self.num_cpus.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
    }

    /// The pool size after defaults: 30% of RAM, capped by what /dev/shm can hold.
    pub fn effective_object_store_memory(&self) -> u64 {
        if let Some(b) = self.object_store_memory {
            return b;
        }
        let ram = rustix::system::sysinfo().totalram as u64;
        let want = ram / 10 * 3;
        let shm_free = rustix::fs::statvfs("/dev/shm").map(|s| s.f_bavail * s.f_frsize).unwrap_or(want);
        want.min(shm_free / 10 * 9)
    }
}
