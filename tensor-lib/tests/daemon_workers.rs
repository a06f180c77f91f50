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
    let out = Command::new(ares_bin())
        .args(["start", "--head", "--port", "0", "--node-ip-address", "127.0.0.1", "--num-cpus", "2"])
        .args(["--object-store-memory", "128M", "--session-root"])
        .arg(&root)
        .env_remove("ARES_ADDRESS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ares start failed:\n{text}");

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
