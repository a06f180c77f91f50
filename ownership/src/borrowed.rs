//! The borrower's side: refs this process holds to objects other processes own.
//!
//! A borrowed ref is decoded from something that keeps the object alive for the moment
//! (a task's arguments, which the caller's submitted count holds until the task replies;
//! a value being read). Before that holder can let go, the borrower *registers* with the
//! owner (`AddBorrower`), and the owner keeps the object until the borrower reports the
//! ref gone (`RefRemoved`). A borrower registers directly with the owner, however many
//! hands the ref passed through, so the owner never depends on an intermediate process
//! staying alive (Ray merges borrowers-of-borrowers into its reply instead; the effect
//! on the owner's count is the same).
//!
//! ```text
//!  add_local ──▶ Unregistered ──take_unregistered──▶ Asking ──registered──▶ Registered
//!                    │                                 │                     │
//!                    └─(out of scope)─▶ forgotten      └──(out of scope)─────┴─▶ Output::Removed
//! ```
//!
//! An owner that is gone (its connection ended, its node died) makes its refs *orphaned*:
//! they stay until dropped, reads of them fail with `OwnerDied`, and dropping them sends
//! nothing.

use std::collections::VecDeque;

use ares_common::det::DetMap;
use ares_common::{NodeId, ObjectId, WorkerId};

/// The owner of a borrowed object: its core worker and node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The owning core worker.
    pub worker: WorkerId,
    /// Its node (whose raylet relays messages to it).
    pub node: NodeId,
}

/// Where a borrowed ref stands with its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// The owner does not know this process holds it yet.
    Unregistered,
    /// `AddBorrower` was sent; no answer yet.
    Asking,
    /// The owner counts this process as a borrower.
    Registered,
    /// The owner does not have the object (it was freed before the registration).
    Missing,
    /// The owner is gone.
    Orphaned,
}

/// What the borrower must carry out.
#[derive(Debug, PartialEq, Eq)]
pub enum BorrowOutput {
    /// Tell `owner` this process no longer holds `id`.
    Removed {
        /// The owner.
        owner: Owner,
        /// The object.
        id: ObjectId,
    },
}

#[derive(Debug)]
struct Borrowed {
    owner: Owner,
    /// Live `ObjectRef` families in this process.
    local: u32,
    /// Pending tasks of this process carrying it inside an argument.
    submitted: u32,
    /// Owned objects whose value (a `put`'s, or a task's return) holds the ref.
    contained: u32,
    reg: Registration,
}

impl Borrowed {
    fn new(owner: Owner) -> Self {
        Borrowed { owner, local: 0, submitted: 0, contained: 0, reg: Registration::Unregistered }
    }

    fn in_scope(&self) -> bool {
        self.local > 0 || self.submitted > 0 || self.contained > 0
    }
}

/// The refs one process borrows.
#[derive(Debug, Default)]
pub struct BorrowTable {
    refs: DetMap<ObjectId, Borrowed>,
    out: VecDeque<BorrowOutput>,
}

impl BorrowTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// One more handle family on `id`, owned by `owner`.
    pub fn add_local(&mut self, id: ObjectId, owner: Owner) {
        let e = self.refs.entry(id).or_insert_with(|| Borrowed::new(owner));
        e.local += 1;
    }

    /// The value of an object this process owns holds `id` (owned by `owner`): the ref
    /// stays in scope while that object lives.
    pub fn add_contained(&mut self, id: ObjectId, owner: Owner) {
        self.refs.entry(id).or_insert_with(|| Borrowed::new(owner)).contained += 1;
    }

    /// An owned object whose value held `id` is gone.
    pub fn remove_contained(&mut self, id: ObjectId) {
        if let Some(e) = self.refs.get_mut(&id) {
            e.contained = e.contained.saturating_sub(1);
            self.maybe_forget(id);
        }
    }

    /// One handle family on `id` fewer.
    pub fn remove_local(&mut self, id: ObjectId) {
        if let Some(e) = self.refs.get_mut(&id) {
            e.local = e.local.saturating_sub(1);
            self.maybe_forget(id);
        }
    }

    /// Tasks this process submitted carry these refs (IDs not borrowed are ignored).
    pub fn add_submitted(&mut self, ids: &[ObjectId]) {
        if self.refs.is_empty() {
            return;
        }
        for id in ids {
            if let Some(e) = self.refs.get_mut(id) {
                e.submitted += 1;
            }
        }
    }

    /// A task that carried these refs is done.
    pub fn remove_submitted(&mut self, ids: &[ObjectId]) {
        if self.refs.is_empty() {
            return;
        }
        for id in ids {
            if let Some(e) = self.refs.get_mut(id) {
                e.submitted = e.submitted.saturating_sub(1);
                self.maybe_forget(*id);
            }
        }
    }

    /// The in-scope refs the owners do not know about yet, grouped by owner in a fixed
    /// order; they become `Asking`. The caller sends one `AddBorrower` per owner.
    pub fn take_unregistered(&mut self) -> Vec<(Owner, Vec<ObjectId>)> {
        let mut out: Vec<(Owner, Vec<ObjectId>)> = Vec::new();
        for (id, e) in self.refs.iter_mut() {
            if e.reg != Registration::Unregistered || !e.in_scope() {
                continue;
            }
            e.reg = Registration::Asking;
            match out.iter_mut().find(|(o, _)| *o == e.owner) {
                Some((_, ids)) => ids.push(*id),
                None => out.push((e.owner, vec![*id])),
            }
        }
        out.sort_by_key(|(o, _)| o.worker);
        out
    }

    /// The owner answered a registration of `ids`: it holds all but `missing`.
    pub fn registered(&mut self, ids: &[ObjectId], missing: &[ObjectId]) {
        for id in ids {
            if let Some(e) = self.refs.get_mut(id)
                && e.reg == Registration::Asking
            {
                e.reg = if missing.contains(id) { Registration::Missing } else { Registration::Registered };
            }
        }
    }

    /// The owners matching `gone` are gone (a process exited, a node died or cannot be
    /// reached): their refs are orphaned. Returns the refs newly orphaned.
    pub fn orphan(&mut self, gone: impl Fn(&Owner) -> bool) -> Vec<ObjectId> {
        let mut ids = Vec::new();
        for (id, e) in self.refs.iter_mut() {
            if gone(&e.owner) && e.reg != Registration::Orphaned {
                e.reg = Registration::Orphaned;
                ids.push(*id);
            }
        }
        ids
    }

    /// The owner of a borrowed ref.
    pub fn owner(&self, id: ObjectId) -> Option<Owner> {
        self.refs.get(&id).map(|e| e.owner)
    }

    /// Where a borrowed ref stands with its owner.
    pub fn registration(&self, id: ObjectId) -> Option<Registration> {
        self.refs.get(&id).map(|e| e.reg)
    }

    /// Number of borrowed refs held.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether no borrowed ref is held.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The next effect to carry out.
    pub fn poll(&mut self) -> Option<BorrowOutput> {
        self.out.pop_front()
    }

    fn maybe_forget(&mut self, id: ObjectId) {
        let Some(e) = self.refs.get(&id) else { return };
        if e.in_scope() {
            return;
        }
        let e = self.refs.remove(&id).expect("present");
        // An `Asking` registration is answered after this `RefRemoved` is sent: the
        // relay keeps one sender's messages in order, so the owner sees both, in order.
        if matches!(e.reg, Registration::Asking | Registration::Registered) {
            self.out.push_back(BorrowOutput::Removed { owner: e.owner, id });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn oid(n: u64) -> ObjectId {
        ObjectId::for_return(TaskId::root(Default::default()).child(n), 0)
    }
    fn owner(n: u8) -> Owner {
        Owner { worker: WorkerId([n; 16]), node: NodeId([n; 16]) }
    }

    #[test]
    fn a_ref_dropped_before_registering_costs_the_owner_nothing() {
        let mut t = BorrowTable::new();
        t.add_local(oid(1), owner(1));
        t.add_local(oid(1), owner(1));
        t.remove_local(oid(1));
        t.remove_local(oid(1));
        assert!(t.is_empty());
        assert!(t.poll().is_none());
        assert!(t.take_unregistered().is_empty());
    }

    #[test]
    fn registered_refs_are_reported_gone_once_out_of_scope() {
        let mut t = BorrowTable::new();
        t.add_local(oid(1), owner(1));
        t.add_local(oid(2), owner(2));
        t.add_local(oid(3), owner(1));
        let asks = t.take_unregistered();
        assert_eq!(asks.len(), 2);
        assert_eq!(asks[0].0, owner(1));
        let mut first = asks[0].1.clone();
        first.sort();
        let mut want = vec![oid(1), oid(3)];
        want.sort();
        assert_eq!(first, want);
        assert!(t.take_unregistered().is_empty(), "asked once");
        t.registered(&[oid(1), oid(3)], &[oid(3)]);
        assert_eq!(t.registration(oid(1)), Some(Registration::Registered));
        assert_eq!(t.registration(oid(3)), Some(Registration::Missing));
        // A nested task carrying the ref keeps it past the last local handle.
        t.add_submitted(&[oid(1), oid(9)]);
        t.remove_local(oid(1));
        assert!(t.poll().is_none());
        t.remove_submitted(&[oid(1)]);
        assert_eq!(t.poll(), Some(BorrowOutput::Removed { owner: owner(1), id: oid(1) }));
        // Missing at the owner: nothing to report.
        t.remove_local(oid(3));
        assert!(t.poll().is_none());
        // Still asking: reported all the same (the owner reads both in order).
        t.remove_local(oid(2));
        assert_eq!(t.poll(), Some(BorrowOutput::Removed { owner: owner(2), id: oid(2) }));
        assert!(t.is_empty());
    }

    #[test]
    fn refs_of_a_gone_owner_are_orphaned_and_dropped_silently() {
        let mut t = BorrowTable::new();
        t.add_local(oid(1), owner(1));
        t.add_local(oid(2), owner(2));
        t.take_unregistered();
        assert_eq!(t.orphan(|o| o.worker == WorkerId([1; 16])), vec![oid(1)]);
        assert!(t.orphan(|o| o.worker == WorkerId([1; 16])).is_empty(), "once");
        assert_eq!(t.orphan(|o| o.node == NodeId([2; 16])), vec![oid(2)]);
        assert_eq!(t.registration(oid(1)), Some(Registration::Orphaned));
        // A late answer does not revive it.
        t.registered(&[oid(1)], &[]);
        assert_eq!(t.registration(oid(1)), Some(Registration::Orphaned));
        t.remove_local(oid(1));
        t.remove_local(oid(2));
        assert!(t.poll().is_none());
        assert!(t.is_empty());
    }

    #[test]
    fn a_ref_inside_an_owned_value_lives_as_long_as_the_value() {
        let mut t = BorrowTable::new();
        t.add_contained(oid(1), owner(1));
        assert_eq!(t.take_unregistered(), vec![(owner(1), vec![oid(1)])], "a contained ref registers");
        t.registered(&[oid(1)], &[]);
        t.add_local(oid(1), owner(1));
        t.remove_local(oid(1));
        assert!(t.poll().is_none(), "the value still holds it");
        t.remove_contained(oid(1));
        assert_eq!(t.poll(), Some(BorrowOutput::Removed { owner: owner(1), id: oid(1) }));
        assert!(t.is_empty());
    }
}
