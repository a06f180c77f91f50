//! Helpers for the workspace integration tests. Every test starts a real embedded
//! cluster: a raylet, worker processes, Unix sockets and a shared-memory pool.

pub mod actors;
pub mod daemons;
pub mod netns;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Serializes tests that start a runtime in this process (it is per process).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running runtime for one test; shuts down on drop. Tests in one binary are
/// serialized (the runtime is per process) so that plain `cargo test` works too.
pub struct Cluster {
    _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    /// Starts a runtime with `config`.
    pub fn start(config: ares::Config) -> Self {
        let serial = serial();
        ares::init_with(config).expect("ares::init_with");
        Cluster { _serial: serial }
    }

    /// Starts a runtime with 2 CPUs and defaults otherwise.
    pub fn default_2cpu() -> Self {
        Self::start(ares::Config::default().num_cpus(2))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        ares::shutdown();
    }
}

/// Polls `cond` until it holds; panics with `what` after `limit`. Used only to wait for
/// an event that must happen (a process exiting, a file appearing), never to assert
/// how fast it happens.
pub fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process with `pid` exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    ares_net::process_alive(pid)
}

/// The `ares` binary beside this test's executable (target/<profile>/deps/<test> →
/// target/<profile>/ares); the workspace binaries are built before the tests.
pub fn ares_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("ares");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace binaries first (cargo build --workspace --bins)",
        bin.display()
    );
    bin
}

/// What keeps the shared-memory pool of the raylet in process `pid` alive: its file in
/// /dev/shm (if it was ever left linked), and any process that still maps it or holds
/// it open.
pub fn shm_files_of(pid: u32) -> Vec<String> {
    let prefix = format!("ares-{pid}-");
    let mut left: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    // The pool file is unlinked as soon as it is made, so its memory lives while any
    // process maps it or holds it open: look for those too.
    let needle = format!("/dev/shm/{prefix}");
    for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = proc_dir.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(maps) = std::fs::read_to_string(proc_dir.path().join("maps"))
            && let Some(line) = maps.lines().find(|l| l.contains(&needle))
        {
            left.push(format!("process {name} maps {}", line.split_whitespace().last().unwrap_or("")));
        }
        for fd in std::fs::read_dir(proc_dir.path().join("fd")).into_iter().flatten().flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.to_string_lossy().contains(&needle)
            {
                left.push(format!("process {name} holds {} open", target.display()));
            }
        }
    }
    left
}

/// A client that speaks the raylet's wire protocol itself: registers with the raylet at
/// `socket` as a driver named `worker`, and asks it to create the 10 MiB object the
/// `raw-create` driver mode makes (without sealing it). Returns the connection and its
/// reader, whose next message answers the create.
pub fn raw_create(
    socket: &str,
    worker: u8,
) -> anyhow::Result<(std::os::unix::net::UnixStream, ares_common::frame::FrameReader<std::os::unix::net::UnixStream>)> {
    use ares_common::frame::{FrameReader, write_msg};
    use ares_common::wire::{FromRaylet, ToRaylet};
    let s = std::os::unix::net::UnixStream::connect(socket)?;
    let mut r = FrameReader::new(s.try_clone()?, 1 << 20);
    let worker_id = ares_common::WorkerId([worker; 16]);
    write_msg(&mut &s, &ToRaylet::RegisterDriver { pid: std::process::id(), worker_id })?;
    anyhow::ensure!(matches!(r.read::<FromRaylet>()?, FromRaylet::Registered { .. }));
    let object_id = ares_common::ObjectId::for_put(ares_common::TaskId::root(Default::default()), 0);
    write_msg(
        &mut &s,
        &ToRaylet::CreateObject { request_id: ares_common::RequestId(1), object_id, size: 10 << 20, owner: worker_id },
    )?;
    Ok((s, r))
}
