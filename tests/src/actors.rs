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

    /// The node hosting the actor, as hex.
    pub fn node(&self) -> String {
        ares::node_id().map(|n| ares_common::hex::encode(&n.0)).unwrap_or_default()
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

    /// The value, with the typed receiver form.
    #[allow(clippy::needless_arbitrary_self_type)]
    pub fn typed_get(self: &Self) -> i64 {
        self.value
    }

    /// Borrows from the actor, so the macro leaves it local.
    pub fn label(&self) -> &str {
        "counter"
    }

    /// Kept out of the registry on purpose.
    #[ares(skip)]
    pub fn local_only(&self) -> i64 {
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

/// Calls `linger` on a gate `n` times from inside a task.
#[ares::remote]
pub fn linger_via(gate: ActorHandle<Gate>, n: u32) -> u32 {
    (0..n).map(|_| ares::get(&gate.call(Gate::linger, ())).unwrap()).max().unwrap_or(0)
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
    crowd: std::sync::atomic::AtomicU32,
    most: std::sync::atomic::AtomicU32,
}

impl Default for Gate {
    fn default() -> Self {
        Gate { inside: Mutex::new(0), cv: Condvar::new(), crowd: Default::default(), most: Default::default() }
    }
}

#[ares::actor]
impl Gate {
    /// An empty gate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stays inside for a moment; returns the most callers ever seen inside at once.
    pub fn linger(&self) -> u32 {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.crowd.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        self.crowd.fetch_sub(1, SeqCst);
        self.most.load(SeqCst)
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
