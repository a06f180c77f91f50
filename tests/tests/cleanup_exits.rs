//! However a driver ends (shutdown, return, panic, SIGINT, SIGTERM, SIGKILL), no worker
//! process and no shared-memory file is left behind.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ares_tests::{Cluster, process_alive, shm_files_of, wait_for};

fn reap_orphans() {
    // We are a child subreaper: orphaned workers are reparented to us; collect them.
    loop {
        // SAFETY: plain waitpid on any child, non-blocking.
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if r <= 0 {
            return;
        }
    }
}

fn run_driver(mode: &str, signal: Option<rustix::process::Signal>) {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) has no memory-safety preconditions.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let mut child = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .arg(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let driver_pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let (pids, socket) = line.trim().split_once(' ').unwrap_or_else(|| panic!("driver printed {line:?}"));
    let pids: Vec<u32> = pids.split(',').map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    if let Some(sig) = signal {
        // The driver is blocked, so its workers are up until the signal lands.
        assert!(pids.iter().all(|p| process_alive(*p)));
        rustix::process::kill_process(rustix::process::Pid::from_raw(driver_pid as i32).unwrap(), sig).unwrap();
    }
    let status = child.wait().unwrap();
    if mode == "exit" || mode == "return" {
        assert!(status.success(), "{status}");
    }
    wait_for("every worker to exit", Duration::from_secs(30), || {
        reap_orphans();
        pids.iter().all(|p| !process_alive(*p))
    });
    assert!(shm_files_of(driver_pid).is_empty(), "leftover /dev/shm files: {:?}", shm_files_of(driver_pid));
    let session = Path::new(socket).parent().unwrap();
    if mode == "exit" {
        assert!(!session.exists(), "shutdown removes the session directory");
    }
}

#[test]
fn shutdown_then_exit() {
    run_driver("exit", None);
}

#[test]
fn return_from_main_without_shutdown() {
    run_driver("return", None);
}

#[test]
fn driver_panics() {
    run_driver("panic", None);
}

#[test]
fn driver_gets_sigint() {
    run_driver("wait", Some(rustix::process::Signal::INT));
}

#[test]
fn driver_gets_sigterm() {
    run_driver("wait", Some(rustix::process::Signal::TERM));
}

#[test]
fn driver_gets_sigkill() {
    run_driver("wait", Some(rustix::process::Signal::KILL));
}

#[test]
fn in_process_shutdown_kills_and_reaps_workers() {
    let c = Cluster::default_2cpu();
    let mut workers = Vec::new();
    wait_for("both workers to register", Duration::from_secs(30), || {
        workers = ares::node_stats().unwrap().workers;
        workers.len() == 2
    });
    let socket = ares::raylet_address().unwrap();
    // The check below can fail: while the node runs, this process and its workers map
    // the (unlinked) pool. A worker registers before it maps the pool, so wait for that.
    let mapped = || shm_files_of(std::process::id()).iter().filter(|l| l.contains(" maps ")).count();
    wait_for("the driver and both workers to map the pool", Duration::from_secs(30), || mapped() >= 3);
    drop(c);
    for w in &workers {
        assert!(!process_alive(w.pid), "worker {} survived shutdown", w.pid);
    }
    // Threads of this process that served the node let go of the pool as they end, just
    // after shutdown returns: the mapping must be gone within seconds.
    let mut left = Vec::new();
    wait_for("this process to unmap the pool", Duration::from_secs(10), || {
        left = shm_files_of(std::process::id());
        left.is_empty()
    });
    assert!(left.is_empty(), "{left:?}");
    assert!(!Path::new(&socket).parent().unwrap().exists());
}
