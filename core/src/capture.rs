//! What a value carries: while a value is encoded (a task's argument, a `put`), every
//! `ObjectRef` and `ActorHandle` inside it is recorded here, so the submission can keep
//! them alive as long as the value needs them. While values are only decoded to be
//! re-encoded (merging a list argument), decoding is *passive*: the refs and handles met
//! are uncounted copies.
//!
//! A leaf module: the handle types record themselves here (type-erased), so this module
//! depends on neither of them.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use ares_common::wire::RefInValue;
use ares_common::{ActorId, ObjectId, WorkerId};

/// The refs and handles met while encoding one value.
#[derive(Default)]
pub(crate) struct Captured {
    /// Actors whose handles were encoded.
    pub(crate) actors: Vec<ActorId>,
    /// The same handles as they encode (for whoever will hold the value).
    lent: Vec<ares_common::wire::LentActor>,
    /// Objects whose refs were encoded, with their owners.
    pub(crate) objects: Vec<(ObjectId, WorkerId)>,
    /// The same refs with their owners' nodes (for whoever will hold the value).
    wire: Vec<RefInValue>,
    /// The handle families themselves, kept alive until the submission counted them.
    keep: Vec<Arc<dyn Any + Send + Sync>>,
}

impl Captured {
    /// Adds what `other` captured.
    pub(crate) fn extend(&mut self, other: Captured) {
        self.actors.extend(other.actors);
        self.lent.extend(other.lent);
        self.objects.extend(other.objects);
        self.wire.extend(other.wire);
        self.keep.extend(other.keep);
    }

    /// The actors met, each once, in a fixed order.
    pub(crate) fn actor_ids(&self) -> Vec<ActorId> {
        let mut ids = self.actors.clone();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The actor handles met, each actor once.
    pub(crate) fn lent_actors(&self) -> Vec<ares_common::wire::LentActor> {
        let mut out: Vec<ares_common::wire::LentActor> = Vec::new();
        for a in &self.lent {
            if !out.iter().any(|o| o.id == a.id) {
                out.push(a.clone());
            }
        }
        out
    }

    /// The refs met, each once, with their owners.
    pub(crate) fn refs(&self) -> Vec<RefInValue> {
        let mut out: Vec<RefInValue> = Vec::with_capacity(self.wire.len());
        for r in &self.wire {
            if !out.iter().any(|o| o.id == r.id) {
                out.push(r.clone());
            }
        }
        out
    }
}

thread_local! {
    static CAPTURED: RefCell<Option<Captured>> = const { RefCell::new(None) };
    static PASSIVE: Cell<bool> = const { Cell::new(false) };
    static BORROWED: Cell<u64> = const { Cell::new(0) };
}

/// Records that a borrowed ref was decoded on this thread.
pub(crate) fn record_borrowed() {
    BORROWED.with(|b| b.set(b.get() + 1));
}

/// Borrowed refs decoded on this thread so far: a decode that changed it made refs that
/// must be registered with their owners.
pub(crate) fn borrowed_decoded() -> u64 {
    BORROWED.with(|b| b.get())
}

/// Runs `f` and returns what it encoded.
pub(crate) fn capture<R>(f: impl FnOnce() -> R) -> (R, Captured) {
    /// Restores the outer capture even if `f` panics.
    struct Restore(Option<Option<Captured>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                CAPTURED.with(|c| *c.borrow_mut() = outer);
            }
        }
    }
    let mut restore = Restore(Some(CAPTURED.with(|c| c.borrow_mut().replace(Captured::default()))));
    let r = f();
    let outer = restore.0.take().expect("set above");
    let got = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer)).unwrap_or_default();
    (r, got)
}

/// Records an actor handle being encoded.
pub(crate) fn record_actor(a: ares_common::wire::LentActor, keep: Arc<dyn Any + Send + Sync>) {
    CAPTURED.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.actors.push(a.id);
            v.lent.push(a);
            v.keep.push(keep);
        }
    });
}

/// Records an object ref being encoded.
pub(crate) fn record_object(r: RefInValue, keep: Arc<dyn Any + Send + Sync>) {
    CAPTURED.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.objects.push((r.id, r.owner));
            v.wire.push(r);
            v.keep.push(keep);
        }
    });
}

/// Runs `f`, in which decoded refs and handles are uncounted copies (no borrow is
/// registered and dropping them does nothing).
pub(crate) fn without_borrowing<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the flag even if `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PASSIVE.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PASSIVE.with(|p| p.replace(true)));
    f()
}

/// Whether decoding is passive on this thread (see [`without_borrowing`]).
pub(crate) fn passive() -> bool {
    PASSIVE.with(|p| p.get())
}
