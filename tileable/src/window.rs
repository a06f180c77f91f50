//! The bound on chunk tasks in flight, and the settings of one run.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How far one run of chunk tasks has got (reported as tasks finish).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Chunk tasks finished.
    pub done: usize,
    /// Chunk tasks in this run.
    pub total: usize,
}

/// A progress callback.
pub type ProgressFn = dyn Fn(Progress) + Send + Sync;

/// How a graph runs.
#[derive(Clone)]
pub struct Settings {
    /// Chunk tasks submitted and not yet finished, at most (memory is bounded by about
    /// this many times the chunk size).
    pub max_in_flight: usize,
    /// Called as tasks finish.
    pub progress: Option<Arc<ProgressFn>>,
    /// Set from another thread to stop submitting between chunk tasks.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { max_in_flight: 8, progress: None, cancel: None }
    }
}

impl Settings {
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Bounds the chunk tasks in flight: waits for the oldest once the window is full.
pub(crate) struct Window<O> {
    max: usize,
    /// One result per task in flight, oldest first.
    waiting: VecDeque<O>,
    /// Tasks seen finished, and the run's size, for progress reports.
    done: usize,
    total: usize,
    progress: Option<Arc<ProgressFn>>,
}

impl<O: crate::Output> Window<O> {
    pub(crate) fn new(max: usize, total: usize, progress: Option<Arc<ProgressFn>>) -> Self {
        Window { max: max.max(1), waiting: VecDeque::new(), done: 0, total, progress }
    }

    /// Waits for the oldest task in flight.
    fn wait_oldest(&mut self) {
        if let Some(o) = self.waiting.pop_front() {
            o.wait();
            self.done += 1;
            if let Some(f) = &self.progress {
                f(Progress { done: self.done, total: self.total });
            }
        }
    }

    /// Waits for every task in flight.
    pub(crate) fn drain(&mut self) {
        while !self.waiting.is_empty() {
            self.wait_oldest();
        }
    }

    /// Counts `o` in flight, first waiting for the oldest while the window is full.
    pub(crate) fn admit(&mut self, o: &O) {
        while self.waiting.len() >= self.max {
            self.wait_oldest();
        }
        self.waiting.push_back(o.clone());
    }
}
