//! Actor types shared by the actor tests and the test driver program (both executables
//! register them, so actors spawned by either run in either's workers).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use ares::ActorHandle;

/// A counter with a call log.
pub struct Counter {
    value: i64,
    log: Vec<u64>,
}

#[ares::actor]
impl Counter {
    /// Starts at `start`.
    pub fn new(start: i64) -> Self {
        Counter { value: start, log: Vec::new() }
    }

    /// A constructor that fails.
    pub fn broken(reason: String) -> Self {
        panic!("cannot build: {reason}")
    }

    /// Adds `by`; returns the new value.
    pub fn incr(&mut self, by: i64) -> i64 {
        self.value += by;
        self.value
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.value
    }

    /// Records `i` in the log.
    pub fn append(&mut self, i: u64) {
        self.log.push(i);
    }

    /// The log so far.
    pub fn log(&self) -> Vec<u64> {
        self.log.clone()
    }

    /// The process hosting the actor.
    pub fn pid(&self) -> u32 {
        std::process::id()
    }

    /// Panics.
    pub fn fail(&self, message: String) -> i64 {
        panic!("{message}")
    }

    /// The first time (no `marker` file yet): writes the pid to `marker` and blocks until
    /// killed. Later: returns the value at once.
    pub fn hang_once(&self, marker: String) -> i64 {
        if !std::path::Path::new(&marker).exists() {
            let tmp = format!("{marker}.tmp");
            std::fs::write(&tmp, std::process::id().to_string()).unwrap();
            std::fs::rename(&tmp, &marker).unwrap();
            std::thread::sleep(Duration::from_secs(3600));
        }
        self.value
    }

    /// Calls `incr(by)` on another counter through a handle this actor received.
    pub fn incr_other(&self, other: ActorHandle<Counter>, by: i64) -> i64 {
        ares::get(&other.call(Counter::incr, by)).expect("call through a borrowed handle")
    }
}

impl Counter {
    /// Not registered: calling it remotely fails `FunctionNotFound`.
    pub fn unregistered(&self) -> i64 {
        self.value
    }
}

/// Calls `incr(by)` on a counter from inside a task.
#[ares::remote]
pub fn incr_via(counter: ActorHandle<Counter>, by: i64) -> i64 {
    ares::get(&counter.call(Counter::incr, by)).expect("call from a task")
}

/// A rendezvous: `meet(n)` returns true once `n` calls are inside it at the same time
/// (false if that does not happen within a minute, instead of hanging).
pub struct Gate {
    inside: Mutex<u32>,
    cv: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Gate { inside: Mutex::new(0), cv: Condvar::new() }
    }
}

#[ares::actor]
impl Gate {
    /// An empty gate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until `n` callers are inside.
    pub fn meet(&self, n: u32) -> bool {
        let mut g = self.inside.lock().unwrap();
        *g += 1;
        self.cv.notify_all();
        let (g, timeout) = self.cv.wait_timeout_while(g, Duration::from_secs(60), |k| *k < n).unwrap();
        drop(g);
        !timeout.timed_out()
    }
}
