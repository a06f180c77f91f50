//! Peak memory of a process tree, sampled while a benchmark runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Summed RSS of `pid` and all its descendants, in bytes.
fn tree_rss(pid: u32) -> u64 {
    let page = 4096u64;
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
            let ppid =
                stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|x| x.parse().ok());
            if let Some(ppid) = ppid {
                parents.push((p, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/statm")).ok())
        .filter_map(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<u64>().ok()))
        .map(|pages| pages * page)
        .sum()
}

/// Samples the summed RSS of a process and its descendants on a thread until stopped.
pub(crate) struct PeakRss {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl PeakRss {
    /// Starts sampling `pid`'s tree every `every`.
    pub(crate) fn start(pid: u32, every: Duration) -> PeakRss {
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, max) = (stop.clone(), max.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    max.fetch_max(tree_rss(pid), Ordering::Relaxed);
                    std::thread::sleep(every);
                }
            })
        };
        PeakRss { stop, max, thread }
    }

    /// Stops sampling; the largest sum seen, in bytes.
    pub(crate) fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.max.load(Ordering::Relaxed)
    }
}
