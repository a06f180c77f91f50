//! Tensor programs on a node daemon started without a worker program: the daemon's
//! workers are the `ares` binary itself, which carries the chunk kernels, so a program
//! that brings no executable of its own still computes (and gives ndarray's answer).

use std::path::{Path, PathBuf};
use std::process::Command;

use ares_tensor::{Session, from_array};
use ndarray::{Array2, Ix2};

fn ares_bin() -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/ares
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("ares");
    assert!(bin.exists(), "{} is missing: build the workspace binaries first", bin.display());
    bin
}

struct StopOnDrop(PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = Command::new(ares_bin()).args(["stop", "--grace", "5", "--session-root"]).arg(&self.0).output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_ares_binary_runs_the_chunk_kernels_for_a_driver() {
    let root = std::env::temp_dir().join(format!("ares-kernels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let _stop = StopOnDrop(root.clone());
    start(&root, &["--head", "--port", "0", "--num-cpus", "2"]);

    let mut cfg = ares::Config::default();
    cfg.address = Some("auto".into());
    cfg.session_root = root.clone();
    ares::init_with(cfg).unwrap();
    let x = Array2::from_shape_fn((60, 40), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0).into_dyn();
    let s = Session::new();
    let a = from_array(&x, &[16, 16]).unwrap();
    // Element-wise, a reduction and a blocked product: every kind of kernel.
    let total = s.scalar(&((&a * 2.0) + 1.0).sum()).unwrap();
    let want: f64 = x.iter().map(|v| v * 2.0 + 1.0).sum();
    assert!((total - want).abs() < 1e-9, "{total} vs {want}");
    let gram = a.matmul(&a.t().unwrap()).unwrap().fetch::<f64>(&s).unwrap();
    let x2 = x.view().into_dimensionality::<Ix2>().unwrap();
    assert_eq!(gram, x2.dot(&x2.t()).into_dyn());

    // The chunks ran in the daemon's workers, which are the `ares` binary.
    let workers = ares::node_stats().unwrap().workers;
    assert!(!workers.is_empty());
    let bin = std::fs::canonicalize(ares_bin()).unwrap();
    for w in &workers {
        let exe = std::fs::read_link(format!("/proc/{}/exe", w.pid)).unwrap();
        assert_eq!(exe, bin, "worker {} runs {}", w.pid, exe.display());
    }
    ares::shutdown();
    assert!(Path::new(&root).exists());
}

/// `ares start` with `args` on 127.0.0.1 and a 128 MiB pool under `root`; its summary.
fn start(root: &Path, args: &[&str]) -> String {
    let out = Command::new(ares_bin())
        .args(["start", "--node-ip-address", "127.0.0.1", "--object-store-memory", "128M"])
        .arg("--session-root")
        .arg(root)
        .args(args)
        .env_remove("ARES_ADDRESS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ares start failed:\n{text}");
    text
}

fn field(summary: &str, key: &str) -> String {
    summary.lines().find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string())).unwrap()
}

/// A head and two members on 127.0.0.1 with `common` flags each, under
/// `<tmp>/ares-<name>-<pid>`, with this process joined as a driver of the head once the
/// view lists the three. Returns what stops them on drop and the members' pids.
fn three_nodes(name: &str, common: &[&str]) -> (Vec<StopOnDrop>, Vec<i32>) {
    let base = std::env::temp_dir().join(format!("ares-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let roots: Vec<PathBuf> = (1..=3).map(|i| base.join(format!("node{i}"))).collect();
    // Dropped in order: the nodes stop, then their common directory goes.
    let stop: Vec<StopOnDrop> = roots.iter().cloned().chain([base.clone()]).map(StopOnDrop).collect();
    let mut head_args = vec!["--head", "--port", "0"];
    head_args.extend_from_slice(common);
    let head = start(&roots[0], &head_args);
    let (addr, token) = (field(&head, "cluster address:"), field(&head, "join token:"));
    let mut pids = Vec::new();
    for r in &roots[1..] {
        let mut args = vec!["--address", addr.as_str(), "--token", token.as_str()];
        args.extend_from_slice(common);
        pids.push(pid_of(&start(r, &args)));
    }
    let mut cfg = ares::Config::default();
    cfg.address = Some("auto".into());
    cfg.session_root = roots[0].clone();
    ares::init_with(cfg).unwrap();
    let serving = || ares::nodes().unwrap().iter().filter(|n| n.alive && n.addr.is_some()).count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while serving() < 3 {
        assert!(std::time::Instant::now() < deadline, "the view never listed 3 nodes");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (stop, pids)
}

#[test]
fn a_tensor_expression_on_three_nodes_gives_ndarrays_answer_from_chunks_on_several_nodes() {
    let (_stop, _) = three_nodes("kernels3", &["--num-cpus", "1"]);
    let granted = || -> Vec<u64> { ares::nodes().unwrap().iter().map(|n| n.load.leases_granted).collect() };
    let before = granted();

    let x = Array2::from_shape_fn((120, 40), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0).into_dyn();
    let s = Session::new();
    let a = from_array(&x, &[20, 40]).unwrap();
    let total = s.scalar(&((&a * 2.0) + 1.0).sum()).unwrap();
    let want: f64 = x.iter().map(|v| v * 2.0 + 1.0).sum();
    assert!((total - want).abs() < 1e-9, "{total} vs {want}");
    let gram = a.t().unwrap().matmul(&a).unwrap().fetch::<f64>(&s).unwrap();
    let x2 = x.view().into_dimensionality::<Ix2>().unwrap();
    assert_eq!(gram, x2.t().dot(&x2).into_dyn());

    // Heartbeats carry each node's lease count to the view within about 100 ms.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let used = granted().iter().zip(&before).filter(|(now, was)| now > was).count();
        if used >= 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "chunks ran on {used} node(s)");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ares::shutdown();
}

/// The pid in a daemon's summary line `ares: … (pid N)`.
fn pid_of(summary: &str) -> i32 {
    field(summary, "ares:").split("(pid ").nth(1).unwrap().trim_end_matches(')').parse().unwrap()
}

#[test]
fn a_tensor_whose_chunks_are_partly_on_a_killed_node_still_gives_ndarrays_answer() {
    let (_stop, pids) = three_nodes("kernels-loss", &["--num-cpus", "1", "--node-timeout-ms", "1000"]);
    // Chunks made by tasks (a seeded generator), so that they can be made again, and
    // large enough (200 kB) to live in the nodes' stores rather than in the driver.
    let s = Session::new();
    let a = ares_tensor::random::rand(&[2000, 100], &[250, 100], 7).unwrap();
    let x = a.fetch::<f64>(&s).unwrap();
    let b = (&a * 2.0) + 1.0;
    s.execute(&b).unwrap();
    // b's chunks stay where they were made, spread over the nodes; one node dies with
    // its share.
    // Heartbeats carry each node's lease count to the view within about 100 ms.
    let victim = pids[1] as u32;
    let ran_there = || ares::nodes().unwrap().iter().any(|n| n.pid == victim && n.load.leases_granted > 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ran_there() {
        assert!(std::time::Instant::now() < deadline, "no chunk ran on the node to be killed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    rustix::process::kill_process(rustix::process::Pid::from_raw(pids[1]).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    let got = b.fetch::<f64>(&s).unwrap();
    assert_eq!(got, x.mapv(|v| v * 2.0 + 1.0), "b read back after the loss");
    let total = s.scalar(&(&b * 3.0).sum()).unwrap();
    let want: f64 = x.iter().map(|v| (v * 2.0 + 1.0) * 3.0).sum();
    assert!((total - want).abs() < 1e-9 * want.abs().max(1.0), "{total} vs {want}");
    ares::shutdown();
}
