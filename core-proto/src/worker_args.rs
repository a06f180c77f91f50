//! How a worker gets hold of a task's stored arguments, the same in a real worker (the
//! `ares` crate's executor) and a simulated one: a copy listed on the worker's own node is
//! read there only; otherwise a copy is pulled from the listed nodes first. An argument
//! none of whose copies could be read fails the task with `ArgumentUnavailable`, naming
//! the copies tried, so that its owner can drop them, rebuild the value and run the task
//! again.
//!
//! **Must not:** do IO itself: the pull, pin and release are the driver's ([`ArgStore`]).

use ares_common::wire::{TaskSpec, WireArg};
use ares_common::{NodeId, ObjectId, TaskError, WorkerId};

/// The store as a worker reaches it.
pub trait ArgStore {
    /// What a pin gives (where the bytes are, or the bytes).
    type Pin;
    type Error;
    /// Copies `id`, owned by `owner`, into this node from one of `nodes`.
    fn pull(&mut self, id: ObjectId, nodes: &[NodeId], owner: WorkerId) -> Result<(), Self::Error>;
    /// Pins this node's copy of `id` until [`ArgStore::release`].
    fn pin(&mut self, id: ObjectId) -> Result<Self::Pin, Self::Error>;
    /// Lets go of the pins on `ids`.
    fn release(&mut self, ids: Vec<ObjectId>);
    /// Whether `e` says no copy was there to read; if so, what was tried.
    fn lost(e: &Self::Error) -> Option<String>;
}

/// The stored arguments of a task, pinned.
pub struct PinnedArgs<P> {
    /// One per stored argument, in argument order.
    pub pins: Vec<P>,
    /// The IDs pinned (to release once the task ran).
    pub ids: Vec<ObjectId>,
}

/// Why a task's arguments could not be pinned.
pub enum ArgFailure<E> {
    /// No copy could be read: the task fails with this `ArgumentUnavailable`.
    Unavailable(TaskError),
    /// Argument `index` failed otherwise.
    Other { index: usize, error: E },
}

/// Pins every stored argument of `spec` on node `here`, pulling those it does not hold;
/// the copies pulled are added to `pulled` (the worker tells the owner of them, whether
/// or not the task runs). On failure, what was pinned is released.
pub fn pin_args<S: ArgStore>(
    store: &mut S,
    spec: &TaskSpec,
    here: NodeId,
    pulled: &mut Vec<ObjectId>,
) -> Result<PinnedArgs<S::Pin>, ArgFailure<S::Error>> {
    let mut got = PinnedArgs { pins: Vec::new(), ids: Vec::new() };
    let unavailable = |index: usize, object: &ObjectId, reason: String, tried: Vec<NodeId>| {
        ArgFailure::Unavailable(TaskError::ArgumentUnavailable {
            function: spec.function.clone(),
            index: index as u32,
            object: object.to_string(),
            reason,
            tried,
        })
    };
    for (i, a) in spec.args.iter().enumerate() {
        let WireArg::Shared { object_id, nodes, owner, .. } = a else {
            continue;
        };
        let local = nodes.contains(&here);
        let failure = match if local { Ok(()) } else { store.pull(*object_id, nodes, *owner) } {
            Err(error) => match S::lost(&error) {
                // No listed node served a pull.
                Some(reason) => unavailable(i, object_id, reason, nodes.clone()),
                None => ArgFailure::Other { index: i, error },
            },
            Ok(()) => {
                if !local {
                    pulled.push(*object_id);
                }
                match store.pin(*object_id) {
                    Ok(p) => {
                        got.pins.push(p);
                        got.ids.push(*object_id);
                        continue;
                    }
                    // Only this node's copy was tried. (A copy just pulled that is gone
                    // again says nothing of the others: it fails as any other error.)
                    Err(error) => match S::lost(&error) {
                        Some(reason) if local => unavailable(i, object_id, reason, vec![here]),
                        _ => ArgFailure::Other { index: i, error },
                    },
                }
            }
        };
        store.release(got.ids);
        return Err(failure);
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::wire::TaskKind;
    use ares_common::{TaskId, WorkerId};

    /// A store holding `here` copies; pulls succeed from `serving` nodes.
    #[derive(Default)]
    struct Fake {
        here: Vec<ObjectId>,
        serving: Vec<NodeId>,
        pinned: Vec<ObjectId>,
    }

    impl ArgStore for Fake {
        type Pin = ObjectId;
        type Error = String;
        fn pull(&mut self, id: ObjectId, nodes: &[NodeId], _: WorkerId) -> Result<(), String> {
            if !nodes.iter().any(|n| self.serving.contains(n)) {
                return Err("lost: no node served it".into());
            }
            self.here.push(id);
            Ok(())
        }
        fn pin(&mut self, id: ObjectId) -> Result<ObjectId, String> {
            if !self.here.contains(&id) {
                return Err("lost: not here".into());
            }
            self.pinned.push(id);
            Ok(id)
        }
        fn release(&mut self, ids: Vec<ObjectId>) {
            self.pinned.retain(|p| !ids.contains(p));
        }
        fn lost(e: &String) -> Option<String> {
            e.strip_prefix("lost: ").map(str::to_string)
        }
    }

    fn node(n: u8) -> NodeId {
        NodeId([n; 16])
    }

    fn spec(args: &[(ObjectId, NodeId)]) -> TaskSpec {
        let tid = TaskId::root(uuid::Uuid::from_bytes([9; 16]));
        TaskSpec {
            task_id: tid,
            function: "f".into(),
            args: args
                .iter()
                .map(|(id, n)| WireArg::Shared { object_id: *id, nodes: vec![*n], owner: WorkerId([1; 16]), len: 8 })
                .collect(),
            owner: WorkerId([1; 16]),
            attempt: 0,
            kind: TaskKind::Normal,
            num_returns: 1,
        }
    }

    fn oid(n: u8) -> ObjectId {
        ObjectId::for_return(TaskId::root(uuid::Uuid::from_bytes([n; 16])), 0)
    }

    #[test]
    fn local_copies_are_pinned_and_remote_ones_pulled_first() {
        let (a, b) = (oid(1), oid(2));
        let mut s = Fake { here: vec![a], serving: vec![node(2)], ..Fake::default() };
        let mut pulled = Vec::new();
        let got = pin_args(&mut s, &spec(&[(a, node(1)), (b, node(2))]), node(1), &mut pulled).ok().unwrap();
        assert_eq!((got.ids, pulled, s.pinned), (vec![a, b], vec![b], vec![a, b]));
    }

    #[test]
    fn an_unreadable_argument_names_the_copies_tried_and_releases_the_pins() {
        let (a, b) = (oid(1), oid(2));
        // b is on node 3, which serves nothing.
        let mut s = Fake { here: vec![a], ..Fake::default() };
        let mut pulled = Vec::new();
        match pin_args(&mut s, &spec(&[(a, node(1)), (b, node(3))]), node(1), &mut pulled) {
            Err(ArgFailure::Unavailable(TaskError::ArgumentUnavailable { index: 1, tried, .. })) => {
                assert_eq!(tried, vec![node(3)])
            }
            _ => panic!("expected ArgumentUnavailable for argument 1"),
        }
        assert!(s.pinned.is_empty() && pulled.is_empty());
        // This node's own copy is gone: only it was tried.
        let mut s = Fake::default();
        match pin_args(&mut s, &spec(&[(a, node(1))]), node(1), &mut pulled) {
            Err(ArgFailure::Unavailable(TaskError::ArgumentUnavailable { index: 0, tried, .. })) => {
                assert_eq!(tried, vec![node(1)])
            }
            _ => panic!("expected ArgumentUnavailable for argument 0"),
        }
    }
}
