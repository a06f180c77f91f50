//! Node daemons as an operator runs them: `ares start` in the background (on this host,
//! or inside a test bed's namespace), `ares status`, and `ares stop` leaving nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::{ares_bin, process_alive, wait_for};

/// Stdout then stderr of a finished command.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `key: value` from a started daemon's summary.
pub fn field(summary: &str, key: &str) -> String {
    summary
        .lines()
        .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
        .unwrap_or_else(|| panic!("no {key} in:\n{summary}"))
}

/// `ares <args>` with `env` added, and without the caller's cluster address or token.
pub fn ares_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(ares_bin());
    cmd.args(args).env_remove("ARES_ADDRESS").env_remove("ARES_TOKEN").envs(env.iter().copied());
    cmd.output().unwrap()
}

/// The test driver beside the `ares` binary (a worker program with the tests' remote
/// functions and the tensor kernels).
pub fn driver_bin() -> PathBuf {
    ares_bin().with_file_name("ares-test-driver")
}

/// Stops the daemons under these session roots when dropped, so that a failing test
/// leaves no daemon behind.
pub struct StopOnDrop(pub Vec<PathBuf>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        for r in &self.0 {
            let _ = ares_env(&["stop", "--grace", "5", "--session-root", r.to_str().unwrap()], &[]);
        }
    }
}

/// A started daemon: its session root and pid.
pub struct Node {
    pub root: PathBuf,
    pub pid: u32,
}

/// Runs `cmd` (an `ares` command line, possibly inside a namespace) with `start
/// --session-root <root>`, the test driver as worker program and a 32 MiB pool unless
/// `extra` says otherwise, then `extra`. Returns the node and its start-up summary.
pub fn start_node(mut cmd: Command, root: &Path, extra: &[&str]) -> (Node, String) {
    let mut args = vec!["start", "--session-root", root.to_str().unwrap()];
    let driver = driver_bin();
    if !extra.contains(&"--worker-program") {
        args.extend_from_slice(&["--worker-program", driver.to_str().unwrap()]);
    }
    if !extra.contains(&"--object-store-memory") {
        args.extend_from_slice(&["--object-store-memory", "32M"]);
    }
    args.extend_from_slice(extra);
    let out = cmd.args(&args).env_remove("ARES_ADDRESS").env_remove("ARES_TOKEN").output().unwrap();
    let summary = text(&out);
    assert!(out.status.success(), "ares start failed:\n{summary}");
    let pid: u32 = field(&summary, "ares:").split("(pid ").nth(1).unwrap().trim_end_matches(')').parse().unwrap();
    (Node { root: root.to_path_buf(), pid }, summary)
}

/// Runs `ares stop` for every node and checks that nothing is left: no daemon, nothing
/// under a session root but the logs, no shared-memory file of a daemon.
pub fn stop_and_check_clean(nodes: &[&Node]) {
    for n in nodes {
        let out = ares_env(&["stop", "--session-root", n.root.to_str().unwrap()], &[]);
        assert!(out.status.success(), "{}", text(&out));
    }
    for n in nodes {
        wait_for("the daemon to exit", Duration::from_secs(30), || !process_alive(n.pid));
        let left: Vec<String> = std::fs::read_dir(&n.root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name != "logs")
            .collect();
        assert!(left.is_empty(), "left under {}: {left:?}", n.root.display());
        assert!(crate::shm_files_of(n.pid).is_empty(), "shared memory of {} left", n.pid);
    }
}

/// `ares status` through the node under `head_root`.
pub fn status(head_root: &Path) -> String {
    status_via(Command::new(ares_bin()), head_root)
}

/// [`status`] run as `cmd` (an `ares` command line, possibly inside a namespace).
pub fn status_via(mut cmd: Command, head_root: &Path) -> String {
    cmd.args(["status", "--session-root", head_root.to_str().unwrap()]);
    let out = cmd.env_remove("ARES_ADDRESS").env_remove("ARES_TOKEN").output().unwrap();
    assert!(out.status.success(), "ares status failed:\n{}", text(&out));
    text(&out)
}

/// The node rows of an `ares status`.
pub fn node_lines(status: &str) -> Vec<String> {
    let row = |l: &&str| l.starts_with("  ") && (l.contains(" alive ") || l.contains(" dead "));
    status.lines().filter(row).map(str::to_string).collect()
}

/// Everything the daemon under `root` logged.
pub fn daemon_log(root: &Path) -> String {
    let logs = std::fs::read_dir(root.join("logs")).expect("the daemon keeps logs");
    logs.flatten().map(|e| std::fs::read_to_string(e.path()).unwrap_or_default()).collect()
}
