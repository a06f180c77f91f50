//! A pipeline over a tensor four times the object store's size finishes, and the store
//! never holds more than the chunk tasks in flight could produce.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ares_tensor::{Session, random};

#[test]
fn a_tensor_four_times_the_store_is_summed_within_the_in_flight_bound() {
    let store: u64 = 64 << 20;
    ares::init_with(ares::Config::default().num_cpus(2).object_store_memory(store)).unwrap();
    let chunk: usize = 1 << 20; // 8 MiB of float64 per chunk
    let n = 4 * store / 8; // 256 MiB of float64 in all
    let session = Session::new().max_in_flight(4);
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(s) = ares::node_stats() {
                    peak.fetch_max(s.store_used, Ordering::Relaxed);
                }
                std::thread::yield_now();
            }
        })
    };
    let a = random::rand(&[n], &[chunk], 7).unwrap();
    let total = session.scalar(&((&a + 1.0) * 2.0).sum()).unwrap();
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    // The mean of (u + 1) * 2 for u uniform on [0, 1) is 3.
    let mean = total / n as f64;
    assert!((mean - 3.0).abs() < 0.01, "mean {mean}");
    let bound = (4 * chunk * 8) as u64;
    let seen = peak.load(Ordering::Relaxed);
    assert!(seen <= bound, "the store held {seen} bytes, over the in-flight bound of {bound}");
    let stats = ares::node_stats().unwrap();
    assert_eq!(stats.store_spilled_bytes_total, 0, "nothing needed spilling");
    ares::shutdown();
}

/// Samples the store's usage until stopped; returns the peak.
fn watch_store() -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let h = std::thread::spawn(move || {
        let mut peak = 0;
        while !s.load(Ordering::Relaxed) {
            if let Ok(st) = ares::node_stats() {
                peak = peak.max(st.store_used);
            }
            std::thread::yield_now();
        }
        peak
    });
    (stop, h)
}

#[test]
fn a_product_feeding_a_reduction_runs_depth_first_and_never_holds_the_whole_product() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let session = Session::new().max_in_flight(4);
    let (rows, cols, chunk) = (2048u64, 1024u64, 256usize);
    let a = random::rand(&[rows, cols], &[chunk, chunk], 5).unwrap();
    let p = a.matmul(&a.t().unwrap()).unwrap();
    let (stop, h) = watch_store();
    let got = session.scalar(&(&p - 1.0).sum()).unwrap();
    stop.store(true, Ordering::Relaxed);
    let peak = h.join().unwrap();
    // Oracle: sum of a·aᵀ is |column sums of a|², computed from a's fetched values.
    let x = a.fetch::<f64>(&session).unwrap();
    let colsum = x.sum_axis(ndarray::Axis(0));
    let want = colsum.iter().map(|c| c * c).sum::<f64>() - (rows * rows) as f64;
    assert!((got - want).abs() < 1e-9 * want.abs(), "{got} vs {want}");
    let block = (chunk * chunk * 8) as u64;
    let (a_bytes, product) = (rows * cols * 8, rows * rows * 8);
    eprintln!("peak {peak} a {a_bytes} product {product} block {block}");
    // Depth-first: each product block is reduced right after its chain, so the store holds
    // `a` plus a few blocks, never the product.
    assert!(peak <= a_bytes + 12 * block, "peak {peak} bytes: the product ({product} bytes) was held");
    ares::shutdown();
}

/// A spill directory of its own, removed when the test ends.
struct SpillDir(std::path::PathBuf);

impl SpillDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("ares-tensor-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        SpillDir(p)
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_product_larger_than_the_store_spills_and_gives_the_in_memory_answer() {
    // `a` is 11.5 MB in 36 chunks of 320 KB, its product with aᵀ as much again: a store
    // of 4 MiB holds neither. Every task fits (GEMMs sum fewer products), so it finishes.
    let spill = SpillDir::new("ooc");
    let mut cfg = ares::Config::default().num_cpus(2).object_store_memory(4 << 20).spill_dir(&spill.0);
    cfg.min_spill_size = 1 << 20;
    ares::init_with(cfg).unwrap();
    let (n, c) = (1200u64, 200usize);
    let s = Session::new();
    let a = random::rand(&[n, n], &[c, c], 9).unwrap();
    let got = s.scalar(&(a.matmul(&a.t().unwrap()).unwrap() - &a).std()).unwrap();
    let stats = ares::node_stats().unwrap();
    assert!(stats.store_spilled_bytes_total > 0, "nothing spilled: {stats:?}");
    assert!(stats.store_restored_bytes_total > 0, "nothing restored: {stats:?}");
    // Oracle: the same values fetched and computed here.
    let x = a.fetch::<f64>(&s).unwrap().into_dimensionality::<ndarray::Ix2>().unwrap();
    let d = x.dot(&x.t()) - &x;
    let mean = d.mean().unwrap();
    let want = (d.mapv(|v| (v - mean) * (v - mean)).sum() / d.len() as f64).sqrt();
    assert!(((got - want) / want).abs() < 1e-9, "{got} vs {want}");
    ares::shutdown();
}

#[test]
fn a_task_whose_inputs_and_output_cannot_fit_the_store_fails_at_once_naming_it() {
    // One 16 MB chunk in a 4 MiB store: the task making it can never run.
    let spill = SpillDir::new("full");
    let cfg = ares::Config::default().num_cpus(2).object_store_memory(4 << 20).spill_dir(&spill.0);
    ares::init_with(cfg).unwrap();
    let a = random::rand(&[2000, 1000], &[2000, 1000], 3).unwrap();
    let e = Session::new().execute(&(&a * 2.0)).unwrap_err();
    match &e {
        ares_tensor::TensorError::StoreFull { task, needs, capacity } => {
            assert!(task.contains("map"), "{task}");
            assert!(*needs >= 16_000_000 && *capacity == 4 << 20, "{e}");
        }
        other => panic!("expected StoreFull, got {other}"),
    }
    assert!(e.to_string().contains("object store full") && e.to_string().contains("smaller chunks"), "{e}");
    // Nothing of it was submitted: the store is empty.
    assert_eq!(ares::node_stats().unwrap().store_used, 0);
    ares::shutdown();
}
