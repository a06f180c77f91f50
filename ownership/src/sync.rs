//! The thread-shared state and the loom shim.
//!
//! `ObjectRef` handles are cloned and dropped on any user thread while reply-reader
//! threads mark objects ready and `get` callers wait. All of them go through a
//! [`Shared`]: one mutex around the state (the core worker keeps its whole sans-IO state,
//! [`OwnershipTable`] included, in one) and one condition variable that is signalled
//! whenever an object's status changes. The protocol it guarantees for the table,
//! model-checked under loom in `tests`:
//! - each object is freed exactly once, and never while a handle or a pending task
//!   still refers to it;
//! - a waiter blocked in [`Shared::wait_while`] wakes once the object is ready.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicU64, AtomicUsize, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicU64, AtomicUsize, Ordering},
};

#[cfg(doc)]
use crate::table::OwnershipTable;

/// State shared between threads, with a change signal.
pub struct Shared<T> {
    state: Mutex<T>,
    changed: Condvar,
    /// Bumped by every `notify`, so a waiter can spin on it without taking the lock.
    version: AtomicU64,
    /// Threads blocked (or about to block) on `changed`: `notify` skips the wake-up
    /// system call when there are none, which is the common case (waiters spin first).
    waiters: AtomicUsize,
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> Shared<T> {
    /// Shares `state`.
    pub fn new(state: T) -> Self {
        Shared {
            state: Mutex::new(state),
            changed: Condvar::new(),
            version: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
        }
    }

    /// Locks the state. A poisoned lock is recovered: the state machines kept here have
    /// no invariant a panicking thread could break half-way (every method is atomic).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter after a status change. Call it after releasing the lock the
    /// change was made under.
    pub fn notify(&self) {
        self.version.fetch_add(1, Ordering::Release);
        // A waiter registers under the lock before it blocks, so one that saw the state
        // before this change is counted by now; one that locks later sees the change.
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.changed.notify_all();
        }
    }

    /// Bumps the version only (for waiters that spin on it); they still need the lock to
    /// look, so this may be called while holding it. Follow with `notify`.
    pub fn bump(&self) {
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A counter that changes whenever [`Shared::notify`] runs: a waiter that expects
    /// a change soon may spin on it before blocking.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Blocks while `pending(&table)` holds, re-checking after every change.
    pub fn wait_while<'a, F>(&self, mut guard: MutexGuard<'a, T>, mut pending: F) -> MutexGuard<'a, T>
    where
        F: FnMut(&T) -> bool,
    {
        if !pending(&guard) {
            return guard;
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        while pending(&guard) {
            guard = self.changed.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Like [`Shared::wait_while`] but gives up after `timeout`; returns the guard
    /// and whether the condition still holds.
    #[cfg(not(loom))]
    pub fn wait_while_timeout<'a, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
        mut pending: F,
    ) -> (MutexGuard<'a, T>, bool)
    where
        F: FnMut(&T) -> bool,
    {
        if !pending(&guard) {
            return (guard, false);
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let (g, res) =
            self.changed.wait_timeout_while(guard, timeout, |t| pending(t)).unwrap_or_else(|p| p.into_inner());
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        guard = g;
        (guard, res.timed_out())
    }
}

#[cfg(all(test, loom))]
mod tests {
    //! Run with `RUSTFLAGS="--cfg loom" cargo test -p ares-ownership --release`.
    use super::*;
    use crate::table::{Location, Output, OwnershipTable, Status};
    use ares_common::{ObjectId, TaskId};
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicUsize, Ordering};

    fn oid() -> ObjectId {
        ObjectId::for_return(TaskId::root(Default::default()), 0)
    }

    /// Mirrors the core worker's `ObjectRef`: an `Arc` per handle family whose last drop
    /// reports to the table. `frees` counts free decisions.
    type SharedTable = Shared<OwnershipTable>;

    fn stored() -> Location {
        Location::stored(Default::default(), 1)
    }

    /// Frees decided so far.
    fn take_frees(t: &mut OwnershipTable) -> usize {
        let mut n = 0;
        while let Some(Output::Free { .. }) = t.poll() {
            n += 1;
        }
        n
    }

    struct Handle {
        table: Arc<SharedTable>,
        frees: Arc<AtomicUsize>,
    }
    impl Drop for Handle {
        fn drop(&mut self) {
            let mut t = self.table.lock();
            t.remove_local_ref(oid());
            let n = take_frees(&mut t);
            drop(t);
            self.frees.fetch_add(n, Ordering::SeqCst);
        }
    }

    #[test]
    fn concurrent_drops_and_task_completion_free_exactly_once() {
        // Four threads contending on one lock: unbounded, loom needs three minutes of CI for
        // this model. Five preemptions per execution (loom advises two or three) still
        // reorder every pair of the three lock holders and the joins; ~15 s here.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(5);
        model.check(|| {
            let table = Arc::new(SharedTable::default());
            let frees = Arc::new(AtomicUsize::new(0));
            table.lock().add_owned(oid(), Status::Pending);
            // A second handle family for the same object (as a clone sent to another thread).
            table.lock().add_local_ref(oid());
            let h1 = Handle { table: table.clone(), frees: frees.clone() };
            let h2 = Handle { table: table.clone(), frees: frees.clone() };
            // A pending task also holds it as an argument.
            table.lock().add_submitted(&[oid()]);

            let t1 = loom::thread::spawn(move || drop(h1));
            let t2 = loom::thread::spawn(move || drop(h2));
            let (tbl, fr) = (table.clone(), frees.clone());
            let t3 = loom::thread::spawn(move || {
                let mut g = tbl.lock();
                g.set_ready(oid(), stored());
                g.remove_submitted(&[oid()]);
                let n = take_frees(&mut g);
                drop(g);
                tbl.notify();
                fr.fetch_add(n, Ordering::SeqCst);
            });
            t1.join().unwrap();
            t2.join().unwrap();
            t3.join().unwrap();
            assert_eq!(frees.load(Ordering::SeqCst), 1);
            assert!(table.lock().is_empty());
        });
    }

    #[test]
    fn waiter_wakes_when_ready() {
        loom::model(|| {
            let table = Arc::new(SharedTable::default());
            table.lock().add_owned(oid(), Status::Pending);
            let tbl = table.clone();
            let waiter = loom::thread::spawn(move || {
                let g = tbl.lock();
                let g = tbl.wait_while(g, |t| matches!(t.status(oid()), Some(Status::Pending)));
                assert!(matches!(g.status(oid()), Some(Status::Ready(_))));
            });
            {
                let mut g = table.lock();
                g.set_ready(oid(), stored());
                assert!(g.poll().is_none());
            }
            table.notify();
            waiter.join().unwrap();
        });
    }
}
