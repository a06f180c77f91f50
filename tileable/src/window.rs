//! The bound on chunk tasks in flight: at most `max_in_flight` of them, and their inputs
//! and outputs together within a share of the object store, so that what running tasks
//! pin always fits and everything else can spill.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::session::{Progress, ProgressFn};
use crate::task::Obj;

/// What a task takes of the store while it runs: its output and each input, by node,
/// with their sizes in bytes.
pub(crate) type Footprint = Vec<(usize, u64)>;

struct InFlight {
    out: Obj,
    footprint: Footprint,
}

/// The tasks in flight, oldest first, and the store bytes they take.
pub(crate) struct Window {
    max: usize,
    waiting: VecDeque<InFlight>,
    /// Store bytes the tasks in flight may take together; `None`: no bound.
    limit: Option<u64>,
    /// Nodes the tasks in flight read or make, counted once each, with how many tasks
    /// name them and their size.
    resident: HashMap<usize, (u32, u64)>,
    bytes: u64,
    done: usize,
    pub(crate) total: usize,
    progress: Option<Arc<ProgressFn>>,
}

impl Window {
    pub(crate) fn new(max: usize, limit: Option<u64>, progress: Option<Arc<ProgressFn>>) -> Self {
        Window {
            max: max.max(1),
            waiting: VecDeque::new(),
            limit,
            resident: HashMap::new(),
            bytes: 0,
            done: 0,
            total: 0,
            progress,
        }
    }

    /// Store bytes `fp` adds to what the tasks in flight take.
    pub(crate) fn extra(&self, fp: &Footprint) -> u64 {
        let mut seen = Vec::new();
        let mut sum = 0;
        for &(node, bytes) in fp {
            if !self.resident.contains_key(&node) && !seen.contains(&node) {
                seen.push(node);
                sum += bytes;
            }
        }
        sum
    }

    /// Whether a task of footprint `fp` may start now: a slot is free and it fits the
    /// store share, or nothing else is in flight.
    pub(crate) fn fits(&self, fp: &Footprint) -> bool {
        if self.waiting.len() >= self.max {
            return false;
        }
        match self.limit {
            Some(limit) if !self.waiting.is_empty() => self.bytes + self.extra(fp) <= limit,
            _ => true,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Waits for the oldest task in flight.
    pub(crate) fn wait_oldest(&mut self) {
        let Some(t) = self.waiting.pop_front() else { return };
        t.out.wait();
        for (node, _) in t.footprint {
            if let Some(e) = self.resident.get_mut(&node) {
                e.0 -= 1;
                if e.0 == 0 {
                    self.bytes -= e.1;
                    self.resident.remove(&node);
                }
            }
        }
        self.done += 1;
        if let Some(f) = &self.progress {
            f(Progress { done: self.done, total: self.total.max(self.done) });
        }
    }

    /// Waits for every task in flight.
    pub(crate) fn drain(&mut self) {
        while !self.waiting.is_empty() {
            self.wait_oldest();
        }
    }

    /// Counts a submitted task in flight.
    pub(crate) fn admit(&mut self, out: Obj, footprint: Footprint) {
        let mut counted: Vec<usize> = Vec::with_capacity(footprint.len());
        let mut fp = Vec::with_capacity(footprint.len());
        for (node, bytes) in footprint {
            if counted.contains(&node) {
                continue;
            }
            counted.push(node);
            let e = self.resident.entry(node).or_insert((0, bytes));
            if e.0 == 0 {
                self.bytes += bytes;
            }
            e.0 += 1;
            fp.push((node, bytes));
        }
        self.waiting.push_back(InFlight { out, footprint: fp });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_sharing_inputs_count_them_once_and_a_task_over_the_limit_waits_its_turn() {
        let mut w = Window::new(8, Some(100), None);
        let a: Footprint = vec![(10, 30), (1, 40)];
        assert!(w.fits(&a), "an empty window takes anything");
        w.admit(Obj::fake(), a);
        // Shares input 1: adds only its own output.
        let b: Footprint = vec![(11, 30), (1, 40)];
        assert_eq!(w.extra(&b), 30);
        assert!(w.fits(&b));
        w.admit(Obj::fake(), b);
        assert_eq!(w.bytes, 100);
        let c: Footprint = vec![(12, 1)];
        assert!(!w.fits(&c), "over the limit while others run");
        w.wait_oldest();
        assert_eq!(w.bytes, 70, "input 1 is still read by the second task");
        w.wait_oldest();
        assert_eq!((w.bytes, w.resident.len()), (0, 0));
        let huge: Footprint = vec![(13, 1000)];
        assert!(w.fits(&huge), "alone, a task over the limit runs");
    }

    #[test]
    fn the_window_holds_at_most_max_tasks() {
        let mut w = Window::new(2, None, None);
        w.admit(Obj::fake(), vec![(1, 1)]);
        w.admit(Obj::fake(), vec![(2, 1)]);
        assert!(!w.fits(&vec![(3, 1)]));
        w.wait_oldest();
        assert!(w.fits(&vec![(3, 1)]));
    }
}
