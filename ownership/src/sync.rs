//! The thread-shared table and the loom shim.
//!
//! `ObjectRef` handles are cloned and dropped on any user thread while reply-reader
//! threads mark objects ready and `get` callers wait. All of them go through
//! [`SharedTable`]: one mutex around the [`OwnershipTable`] and one condition variable
//! that is signalled whenever an object's status changes. The protocol it guarantees,
//! model-checked under loom in `tests`:
//! - each object is freed exactly once, and never while a handle or a pending task
//!   still refers to it;
//! - a waiter blocked in [`SharedTable::wait_while`] wakes once the object is ready.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicU64, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicU64, Ordering},
};

use crate::table::OwnershipTable;

/// An [`OwnershipTable`] shared between threads, with a change signal.
pub struct SharedTable {
    table: Mutex<OwnershipTable>,
    changed: Condvar,
    /// Bumped by every `notify`, so a waiter can spin on it without taking the lock.
    version: AtomicU64,
}

impl Default for SharedTable {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedTable {
    /// An empty shared table.
    pub fn new() -> Self {
        SharedTable { table: Mutex::new(OwnershipTable::new()), changed: Condvar::new(), version: AtomicU64::new(0) }
    }

    /// Locks the table. A poisoned lock is recovered: the table has no invariant a
    /// panicking user thread could have broken half-way (every method is atomic).
    pub fn lock(&self) -> MutexGuard<'_, OwnershipTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter after a status change.
    pub fn notify(&self) {
        self.version.fetch_add(1, Ordering::Release);
        self.changed.notify_all();
    }

    /// A counter that changes whenever [`SharedTable::notify`] runs: a waiter that expects
    /// a change soon may spin on it before blocking.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Blocks while `pending(&table)` holds, re-checking after every change.
    pub fn wait_while<'a, F>(
        &self,
        mut guard: MutexGuard<'a, OwnershipTable>,
        mut pending: F,
    ) -> MutexGuard<'a, OwnershipTable>
    where
        F: FnMut(&OwnershipTable) -> bool,
    {
        while pending(&guard) {
            guard = self.changed.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        guard
    }

    /// Like [`SharedTable::wait_while`] but gives up after `timeout`; returns the guard
    /// and whether the condition still holds.
    #[cfg(not(loom))]
    pub fn wait_while_timeout<'a, F>(
        &self,
        mut guard: MutexGuard<'a, OwnershipTable>,
        timeout: std::time::Duration,
        mut pending: F,
    ) -> (MutexGuard<'a, OwnershipTable>, bool)
    where
        F: FnMut(&OwnershipTable) -> bool,
    {
        let (g, res) =
            self.changed.wait_timeout_while(guard, timeout, |t| pending(t)).unwrap_or_else(|p| p.into_inner());
        guard = g;
        (guard, res.timed_out())
    }
}

#[cfg(all(test, loom))]
mod tests {
    //! Run with `RUSTFLAGS="--cfg loom" cargo test -p ares-ownership --release`.
    use super::*;
    use crate::table::{Free, Location, Status};
    use ares_common::{ObjectId, TaskId};
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicUsize, Ordering};

    fn oid() -> ObjectId {
        ObjectId::for_return(TaskId::root(Default::default()), 0)
    }

    /// Mirrors the core worker's `ObjectRef`: an `Arc` per handle family whose last drop
    /// reports to the table. `frees` counts free decisions.
    struct Handle {
        table: Arc<SharedTable>,
        frees: Arc<AtomicUsize>,
    }
    impl Drop for Handle {
        fn drop(&mut self) {
            let f: Option<Free> = self.table.lock().remove_local_ref(oid());
            if f.is_some() {
                self.frees.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn concurrent_drops_and_task_completion_free_exactly_once() {
        loom::model(|| {
            let table = Arc::new(SharedTable::new());
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
                let mut n = g.set_ready(oid(), Location::Shared { offset: 0, len: 1 }).is_some() as usize;
                n += g.remove_submitted(&[oid()]).len();
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
            let table = Arc::new(SharedTable::new());
            table.lock().add_owned(oid(), Status::Pending);
            let tbl = table.clone();
            let waiter = loom::thread::spawn(move || {
                let g = tbl.lock();
                let g = tbl.wait_while(g, |t| matches!(t.status(oid()), Some(Status::Pending)));
                assert!(matches!(g.status(oid()), Some(Status::Ready(_))));
            });
            {
                let mut g = table.lock();
                assert!(g.set_ready(oid(), Location::Shared { offset: 0, len: 1 }).is_none());
            }
            table.notify();
            waiter.join().unwrap();
        });
    }
}
