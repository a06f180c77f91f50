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
    let session = Session { max_in_flight: 4, ..Session::default() };
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
    let bound = (session.max_in_flight * chunk * 8) as u64;
    let seen = peak.load(Ordering::Relaxed);
    assert!(seen <= bound, "the store held {seen} bytes, over the in-flight bound of {bound}");
    let stats = ares::node_stats().unwrap();
    assert_eq!(stats.store_spilled_bytes_total, 0, "nothing needed spilling");
    ares::shutdown();
}
