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
