//! Runtime configuration of a node and of the processes on it.

use std::path::PathBuf;

/// Default pool size as a fraction of RAM (Ray's default).
pub const DEFAULT_STORE_FRACTION: f64 = 0.3;

/// Cap on the default pool size (an explicit size is not capped).
pub const MAX_DEFAULT_STORE_BYTES: u64 = 64 << 30;

/// Lineage an owner keeps by default (Ray's default `max_lineage_bytes`).
pub const DEFAULT_MAX_LINEAGE_BYTES: u64 = 1 << 30;

/// A configuration value that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("bad value {value:?} for {key}: {reason}")]
pub struct ConfigError {
    /// The variable or flag.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Why it was rejected.
    pub reason: String,
}

fn cpus_in_range(n: u32) -> Result<u32, String> {
    if (1..=MAX_CPUS).contains(&n) { Ok(n) } else { Err(format!("a node offers 1 to {MAX_CPUS} CPUs")) }
}

fn fraction(f: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&f) { Ok(f) } else { Err("must be between 0 and 1".into()) }
}

fn workers_in_range(n: u32) -> Result<u32, String> {
    if (1..=MAX_CPUS).contains(&n) { Ok(n) } else { Err(format!("a node runs 1 to {MAX_CPUS} worker processes")) }
}

fn pool_in_range(b: u64) -> Result<u64, String> {
    if b >= MIN_POOL_BYTES { Ok(b) } else { Err("the pool needs at least 1 MiB (e.g. 512M, 4G)".into()) }
}

/// A duration of `ms` milliseconds, refused below `min` (with `why` appended).
fn millis_at_least(ms: u64, min: u64, why: &str) -> Result<std::time::Duration, String> {
    if ms < min {
        return Err(format!("must be at least {min}{why}"));
    }
    Ok(std::time::Duration::from_millis(ms))
}

/// Parses a byte size: a plain number, or with a suffix K, M, G (powers of 1024) or a
/// percent sign is rejected (use the fraction options for that).
pub fn parse_bytes(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let (digits, mult) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (v, 1u64),
        Some((i, _)) => {
            let unit = v[i..].trim().to_ascii_uppercase();
            let mult = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => return Err(format!("unknown size unit {unit:?} (use K, M, G or T)")),
            };
            (&v[..i], mult)
        }
    };
    let n: u64 = digits.parse().map_err(|e| format!("not a size: {e}"))?;
    n.checked_mul(mult).ok_or_else(|| "size overflows".to_string())
}

/// The per-user default root of session directories: `$XDG_RUNTIME_DIR/ares` where that
/// is set (a private, per-user directory on systemd machines), else `<tmp>/ares-<uid>`.
/// A shared root would let one user's sessions lock out or hijack another's.
pub fn default_session_root() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("ares"),
        None => std::env::temp_dir().join(format!("ares-{}", rustix::process::getuid().as_raw())),
    }
}

/// Results at most this large return inline to the owner (Ray's default: 100 KiB).
pub const DEFAULT_MAX_INLINE_BYTES: usize = 100 << 10;

/// Most CPUs (and worker processes) a node may be configured with.
pub const MAX_CPUS: u32 = 4096;
/// Smallest pool a node may be configured with.
pub const MIN_POOL_BYTES: u64 = 1 << 20;

/// Settings for `ares::init_with` and the raylet. `Default` gives the embedded one-node
/// cluster a laptop user expects.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// A running node daemon (`ares start`) to connect to, by its socket path; `None`
    /// starts an embedded one-node cluster inside the driver.
    pub address: Option<String>,
    /// CPUs the node offers; `None` means the machine's available parallelism.
    pub num_cpus: Option<u32>,
    /// Custom resources the node offers, such as `("GPU", 1.0)`.
    pub resources: Vec<(String, f64)>,
    /// Size of the shared-memory pool in bytes; wins over the fraction.
    pub object_store_memory: Option<u64>,
    /// Size of the pool as a fraction of RAM (default 0.3), capped at
    /// [`MAX_DEFAULT_STORE_BYTES`] and by the free space of `shm_dir`.
    pub object_store_memory_fraction: Option<f64>,
    /// Directories for spilled objects, used round-robin (default: the session root).
    pub spill_dirs: Vec<PathBuf>,
    /// Where the node's shared-memory pool file is made (and unlinked at once): a
    /// memory-backed filesystem (Ray's `plasma_directory`); default /dev/shm.
    pub shm_dir: PathBuf,
    /// Reserve every page of the pool when it is made (Ray's
    /// `RAY_preallocate_plasma_memory`): start fails at once if the filesystem cannot hold
    /// it, and no first write pays for its pages later. Off by default: the pages are
    /// then reserved as allocations first reach them, which also rules out a SIGBUS.
    pub preallocate_object_store: bool,
    /// Spill cold objects once pinned primary copies fill this fraction of the pool.
    pub spill_threshold: f64,
    /// Objects spilled together are fused into files of at least this many bytes.
    pub min_spill_size: u64,
    /// At most this many objects per spill file.
    pub max_spill_file_objects: usize,
    /// How long a `put` or task result waits for spilling to make room before failing.
    pub object_create_timeout: std::time::Duration,
    /// Largest value kept inline (in the owner's memory) rather than in shared memory.
    pub max_inline_bytes: usize,
    /// Largest frame accepted on any socket.
    pub max_frame_bytes: usize,
    /// Where session directories (sockets) are made.
    pub session_root: PathBuf,
    /// Tasks pushed to one leased worker before the owner waits for replies.
    pub max_tasks_in_flight_per_worker: u32,
    /// Bytes of finished tasks' specs an owner keeps to rebuild lost objects (Ray's
    /// `max_lineage_bytes`); 0 keeps none, so a lost object made by a task fails.
    pub max_lineage_bytes: u64,
    /// Worker processes started at most; `None` means one per CPU.
    pub max_workers: Option<u32>,
    /// The cluster's join token (`ares start --head` prints it).
    pub token: Option<String>,
    /// How long the head waits for a silent node before declaring it dead.
    pub node_timeout: std::time::Duration,
    /// Utilisation under which a node keeps a lease request rather than spilling it back
    /// to another node (Ray's `scheduler_spread_threshold`).
    pub scheduler_spread_threshold: f64,
    /// How long a new raylet connection may stay silent before it must have registered.
    pub identify_timeout: std::time::Duration,
    /// How long a worker process may take to register with its raylet before it is
    /// killed and the requests waiting for it fail with `WorkerStartFailed`.
    pub worker_register_timeout: std::time::Duration,
    /// Client connections a raylet serves at once (local and from other nodes); more
    /// are refused, with a log line at most every 10 s.
    pub max_connections: usize,
    /// How an embedded node starts its workers; `None` re-executes the current
    /// executable (the Rust default). Set in code only, by drivers whose executable cannot
    /// be a worker (the Python package starts its extension module).
    pub worker_command: Option<WorkerCommand>,
}

/// A program an embedded node starts as its workers, with `ARES_WORKER=1` added to `env`.
#[derive(Clone, Debug, Default)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            address: None,
            num_cpus: None,
            resources: Vec::new(),
            object_store_memory: None,
            object_store_memory_fraction: None,
            spill_dirs: Vec::new(),
            shm_dir: PathBuf::from("/dev/shm"),
            preallocate_object_store: false,
            spill_threshold: 0.8,
            min_spill_size: 100 << 20,
            max_spill_file_objects: 1000,
            object_create_timeout: std::time::Duration::from_secs(10),
            max_inline_bytes: DEFAULT_MAX_INLINE_BYTES,
            max_frame_bytes: crate::frame::DEFAULT_MAX_FRAME,
            session_root: default_session_root(),
            max_tasks_in_flight_per_worker: 64,
            max_lineage_bytes: DEFAULT_MAX_LINEAGE_BYTES,
            max_workers: None,
            token: None,
            node_timeout: std::time::Duration::from_secs(10),
            scheduler_spread_threshold: 0.5,
            identify_timeout: std::time::Duration::from_secs(5),
            worker_register_timeout: std::time::Duration::from_secs(30),
            max_connections: 16384,
            worker_command: None,
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

    /// Adds a spill directory.
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dirs.push(dir.into());
        self
    }

    /// The pool size after defaults: a fraction of RAM (30%), capped at
    /// [`MAX_DEFAULT_STORE_BYTES`] and by what `shm_dir` can hold.
    pub fn effective_object_store_memory(&self) -> u64 {
        if let Some(b) = self.object_store_memory {
            return b;
        }
        let si = rustix::system::sysinfo();
        let ram = si.totalram as u64 * si.mem_unit.max(1) as u64;
        let fraction = self.object_store_memory_fraction.unwrap_or(DEFAULT_STORE_FRACTION).clamp(0.0, 1.0);
        let want = ((ram as f64 * fraction) as u64).min(MAX_DEFAULT_STORE_BYTES);
        let shm_free = rustix::fs::statvfs(&self.shm_dir).map(|s| s.f_bavail * s.f_frsize).unwrap_or(want);
        want.min(shm_free / 10 * 9)
    }

    /// The spill directories after defaults.
    pub fn effective_spill_dirs(&self) -> Vec<PathBuf> {
        if self.spill_dirs.is_empty() { vec![self.session_root.clone()] } else { self.spill_dirs.clone() }
    }

    /// Defaults overridden by `ARES_*` environment variables (see the table in
    /// `docs/guide/configuration.md`). Malformed values are an error naming the variable.
    pub fn from_env() -> Result<Config, ConfigError> {
        let mut c = Config::default();
        for (key, value) in std::env::vars() {
            if let Some(name) = key.strip_prefix("ARES_") {
                c.set(&name.to_ascii_lowercase(), &value).map_err(|reason| ConfigError {
                    key: key.clone(),
                    value: value.clone(),
                    reason,
                })?;
            }
        }
        Ok(c)
    }

    /// Checks every value against its range; the error names the option, its value and
    /// the range. `init` and a raylet's start call it, so a value set in code is checked
    /// like one from the environment.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: String, reason: &str| {
            Err(ConfigError { key: key.to_string(), value, reason: reason.to_string() })
        };
        if let Some(Err(reason)) = self.num_cpus.map(cpus_in_range) {
            return bad("num_cpus (ARES_NUM_CPUS)", self.num_cpus.unwrap_or(0).to_string(), &reason);
        }
        if let Some(Err(reason)) = self.max_workers.map(workers_in_range) {
            return bad("max_workers (ARES_MAX_WORKERS)", self.max_workers.unwrap_or(0).to_string(), &reason);
        }
        if let Some(Err(reason)) = self.object_store_memory.map(pool_in_range) {
            let value = self.object_store_memory.unwrap_or(0).to_string();
            return bad("object_store_memory (ARES_OBJECT_STORE_MEMORY)", value, &reason);
        }
        for (name, amount) in &self.resources {
            if !amount.is_finite() || *amount < 0.0 || *amount > 1e9 {
                return bad("resources (ARES_RESOURCES)", format!("{name}={amount}"), "an amount is 0 to 10⁹");
            }
        }
        if self.max_inline_bytes > self.max_frame_bytes / 2 {
            return bad(
                "max_inline_bytes (ARES_MAX_INLINE_BYTES)",
                self.max_inline_bytes.to_string(),
                "inline values must fit well inside a frame: at most half of max_frame_bytes (64 MiB)",
            );
        }
        for (key, f) in [
            ("spill_threshold (ARES_SPILL_THRESHOLD)", self.spill_threshold),
            ("scheduler_spread_threshold (ARES_SCHEDULER_SPREAD_THRESHOLD)", self.scheduler_spread_threshold),
        ] {
            if let Err(reason) = fraction(f) {
                return bad(key, f.to_string(), &reason);
            }
        }
        // Values that only code sets, or that `set` already checks from text, checked
        // again here for `Config` built in code.
        let millis = |d: std::time::Duration| d.as_millis().min(u64::MAX as u128) as u64;
        for (key, d, min) in [
            ("node_timeout (ARES_NODE_TIMEOUT_MS)", self.node_timeout, 200),
            ("identify_timeout (ARES_IDENTIFY_TIMEOUT_MS)", self.identify_timeout, 100),
            ("worker_register_timeout (ARES_WORKER_REGISTER_TIMEOUT_MS)", self.worker_register_timeout, 100),
        ] {
            if let Err(reason) = millis_at_least(millis(d), min, " ms") {
                return bad(key, format!("{} ms", millis(d)), &reason);
            }
        }
        if self.max_connections < 8 {
            return bad("max_connections (ARES_MAX_CONNECTIONS)", self.max_connections.to_string(), "at least 8");
        }
        if !(crate::frame::MAX_HELLO_FRAME..=1 << 30).contains(&self.max_frame_bytes) {
            return bad("max_frame_bytes", self.max_frame_bytes.to_string(), "64 KiB to 1 GiB");
        }
        if self.object_create_timeout > std::time::Duration::from_secs(24 * 3600) {
            let value = format!("{} ms", millis(self.object_create_timeout));
            return bad("object_create_timeout (ARES_OBJECT_CREATE_TIMEOUT_MS)", value, "at most a day");
        }
        if self.max_tasks_in_flight_per_worker == 0 || self.max_tasks_in_flight_per_worker > 1 << 16 {
            return bad(
                "max_tasks_in_flight_per_worker",
                self.max_tasks_in_flight_per_worker.to_string(),
                "1 to 65536",
            );
        }
        Ok(())
    }

    /// Sets one option by its name (the lower-case name of the field, as used by the
    /// `ARES_*` environment variables and the daemon's `--name value` flags). Names that
    /// are not options are ignored, so unrelated `ARES_*` variables do no harm.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(v: &str) -> Result<T, String>
        where
            T::Err: std::fmt::Display,
        {
            v.trim().parse::<T>().map_err(|e| e.to_string())
        }
        match name {
            "address" => self.address = Some(value.to_string()).filter(|a| !a.is_empty()),
            "num_cpus" => self.num_cpus = Some(cpus_in_range(num(value)?)?),
            "max_workers" => self.max_workers = Some(workers_in_range(num(value)?)?),
            "resources" => {
                self.resources.clear();
                for pair in value.split(',').filter(|p| !p.trim().is_empty()) {
                    let (name, amount) = pair.split_once('=').ok_or("expected NAME=AMOUNT[,NAME=AMOUNT]")?;
                    self.resources.push((name.trim().to_string(), num(amount)?));
                }
            }
            "object_store_memory" => self.object_store_memory = Some(pool_in_range(parse_bytes(value)?)?),
            "object_store_memory_fraction" => self.object_store_memory_fraction = Some(fraction(num(value)?)?),
            "spill_dirs" => self.spill_dirs = value.split(':').filter(|d| !d.is_empty()).map(PathBuf::from).collect(),
            "spill_threshold" => self.spill_threshold = fraction(num(value)?)?,
            "scheduler_spread_threshold" => self.scheduler_spread_threshold = fraction(num(value)?)?,
            "min_spill_size" => self.min_spill_size = parse_bytes(value)?,
            "max_spill_file_objects" => self.max_spill_file_objects = num::<usize>(value)?.max(1),
            "object_create_timeout_ms" => self.object_create_timeout = std::time::Duration::from_millis(num(value)?),
            "max_inline_bytes" => self.max_inline_bytes = parse_bytes(value)? as usize,
            "max_lineage_bytes" => self.max_lineage_bytes = parse_bytes(value)?,
            "session_root" => self.session_root = PathBuf::from(value),
            "shm_dir" => self.shm_dir = PathBuf::from(value),
            "preallocate_object_store" => {
                self.preallocate_object_store = match value.trim() {
                    "1" | "true" | "yes" => true,
                    "0" | "false" | "no" | "" => false,
                    _ => return Err("expected 1 or 0 (true or false)".into()),
                }
            }
            "token" => self.token = Some(value.trim().to_string()).filter(|t| !t.is_empty()),
            "node_timeout_ms" => self.node_timeout = millis_at_least(num(value)?, 200, " (nodes report every 100 ms)")?,
            "identify_timeout_ms" => self.identify_timeout = millis_at_least(num(value)?, 100, "")?,
            "worker_register_timeout_ms" => self.worker_register_timeout = millis_at_least(num(value)?, 100, "")?,
            "max_connections" => {
                let n: usize = num(value)?;
                if n < 8 {
                    return Err("must be at least 8 (a node's own workers connect too)".into());
                }
                self.max_connections = n
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_options_parse_with_clear_errors() {
        assert_eq!(parse_bytes("256M").unwrap(), 256 << 20);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("12Q").unwrap_err().contains("unknown size unit"));
        let mut c = Config::default();
        c.set("object_store_memory", "64M").unwrap();
        c.set("spill_dirs", "/a:/b").unwrap();
        c.set("shm_dir", "/mnt/pool").unwrap();
        assert_eq!(c.shm_dir, PathBuf::from("/mnt/pool"));
        c.set("preallocate_object_store", "1").unwrap();
        assert!(c.preallocate_object_store);
        assert!(c.set("preallocate_object_store", "maybe").unwrap_err().contains("1 or 0"));
        c.set("spill_threshold", "0.5").unwrap();
        assert_eq!(c.effective_object_store_memory(), 64 << 20);
        assert_eq!(c.spill_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(c.set("spill_threshold", "1.5").is_err());
        c.set("scheduler_spread_threshold", "0.25").unwrap();
        assert_eq!(c.scheduler_spread_threshold, 0.25);
        assert!(c.set("scheduler_spread_threshold", "-1").unwrap_err().contains("between 0 and 1"));
        let e = Config { scheduler_spread_threshold: 2.0, ..Config::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("ARES_SCHEDULER_SPREAD_THRESHOLD"), "{e}");
        let e = Config { identify_timeout: std::time::Duration::ZERO, ..Config::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("identify_timeout") && e.to_string().contains("at least 100"), "{e}");
        let e = Config { max_frame_bytes: 10, ..Config::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("max_frame_bytes"), "{e}");
        let e = Config { max_connections: 1, ..Config::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("max_connections"), "{e}");
        Config::default().validate().unwrap();
        assert!(c.set("object_store_memory_fraction", "x").is_err());
        c.set("not_an_option", "x").unwrap();
        c.set("max_lineage_bytes", "64M").unwrap();
        assert_eq!(c.max_lineage_bytes, 64 << 20);
    }

    #[test]
    fn default_pool_is_a_capped_fraction_of_ram() {
        let c = Config::default();
        let si = rustix::system::sysinfo();
        let ram = si.totalram as u64 * si.mem_unit.max(1) as u64;
        let n = c.effective_object_store_memory();
        assert!(n > 0 && n <= ram * 3 / 10 + 1 && n <= MAX_DEFAULT_STORE_BYTES);
        let half = Config { object_store_memory_fraction: Some(0.05), ..Config::default() };
        assert!(half.effective_object_store_memory() <= ram / 20 + 1);
    }
}
