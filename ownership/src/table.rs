//! The single-threaded table. See the crate docs for the protocol.
//!
//! ```text
//!  add_owned ──▶ Pending ──set_ready──▶ Ready ──(out of scope)──▶ Output::Free
//!                   │    ──set_failed─▶ Failed ─(out of scope)──▶ Output::Free (no location)
//!                   └─(out of scope)─▶ Pending, kept ──set_ready/failed──▶ Output::Free
//! ```
//!
//! An object is *in scope* while any of these holds it: a local `ObjectRef` family, a
//! pending task that takes it as an argument, an object whose value contains it, or a
//! borrower (another process that received the ref).
//!
//! Lineage: an object may also be *referenced by lineage*: the owner keeps the spec of a
//! finished task that took it as an argument, to re-run that task if its output is lost.
//! An object only lineage refers to is *released*: its value is freed (the usual `Free`)
//! but its entry stays, value-less and invisible to [`OwnershipTable::status`], so that
//! its own task can be re-run in turn ([`OwnershipTable::restart`]). The entry goes (a
//! second `Free`, without location) when the last lineage reference does.

use std::collections::VecDeque;
use std::sync::Arc;

use ares_common::codec::Bytes;
use ares_common::det::DetMap;
use ares_common::error::TaskError;
use ares_common::{NodeId, ObjectId, TaskId, WorkerId};

/// A value held by nodes' shared-memory stores.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// Length in bytes.
    pub len: u64,
    /// The node holding the primary copy (pinned for the owner; spilled, never evicted).
    pub primary: NodeId,
    /// Where the primary copy was spilled to (`file://…`), if it was.
    pub spilled: Option<String>,
    /// Nodes holding secondary copies (pulled there; evictable).
    pub secondary: Vec<NodeId>,
    /// Nodes that may hold a copy nobody reported: a task taking the object ran there on
    /// a worker that was lost before replying. Never read from; deleted there on free.
    pub maybe: Vec<NodeId>,
}

impl Stored {
    /// A value whose only copy is in `node`'s store.
    pub fn on(node: NodeId, len: u64) -> Self {
        Stored { len, primary: node, spilled: None, secondary: Vec::new(), maybe: Vec::new() }
    }

    /// Every node holding a copy, the primary first.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::once(self.primary).chain(self.secondary.iter().copied())
    }

    /// The copies a reader on node `at` tried when it could not read the value: the
    /// copy on its own node if there is one (read in place, never pulled), else every
    /// copy (it pulls from each in turn).
    pub fn tried_from(&self, at: NodeId) -> Vec<NodeId> {
        if self.nodes().any(|n| n == at) { vec![at] } else { self.nodes().collect() }
    }
}

/// Where a ready value is.
#[derive(Clone, Debug)]
pub enum Location {
    /// In the owner's memory (small values).
    Inline(Arc<Bytes>),
    /// In the shared-memory stores of one or more nodes; readers pin it by ID. Boxed:
    /// most values are small and inline, and entries stay compact.
    Stored(Box<Stored>),
}

impl Location {
    /// A value whose only copy is in `node`'s store.
    pub fn stored(node: NodeId, len: u64) -> Self {
        Location::Stored(Box::new(Stored::on(node, len)))
    }

    /// Whether the value is held by nodes' stores (in memory or on disk).
    pub fn in_store(&self) -> bool {
        matches!(self, Location::Stored(_))
    }

    /// The value's length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Location::Inline(b) => b.len() as u64,
            Location::Stored(s) => s.len,
        }
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The state of an owned object.
#[derive(Clone, Debug)]
pub enum Status {
    /// Its task has not reported yet.
    Pending,
    /// Its value is available.
    Ready(Location),
    /// Its task failed for good (boxed, as failures are rare and entries stay compact).
    Failed(Box<TaskError>),
}

/// How an object could be rebuilt if every copy were lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lineage {
    /// Made by `put`: it cannot be rebuilt.
    Put,
    /// The return of this task, whose spec the owner keeps.
    Task(TaskId),
    /// The task's spec was dropped to stay within the lineage budget.
    Evicted,
}

impl Lineage {
    /// The lineage an object starts with, from how its ID was made.
    pub fn of(id: ObjectId) -> Self {
        if id.is_put() { Lineage::Put } else { Lineage::Task(id.task) }
    }
}

/// What the owner must carry out after an event.
#[derive(Debug)]
pub enum Output {
    /// The object went out of scope: delete its value from every place it is stored
    /// (`location` is `None` when there is no value: its task failed).
    Free {
        /// The object.
        id: ObjectId,
        /// Where its value was.
        location: Option<Location>,
    },
}

/// One owned object. Kept small (the table is walked on every `get` and drop): what most
/// objects never have lives in `cold`.
#[derive(Debug)]
struct Entry {
    /// Live `ObjectRef` families in this process.
    local: u32,
    /// Pending tasks taking it as an argument (or carrying it inside an argument).
    submitted: u32,
    /// Owned objects whose value contains this ref.
    contained_in: u32,
    /// The task that made it is no longer kept (see [`Lineage::Evicted`]).
    lineage_evicted: bool,
    /// Out of scope, value freed, entry kept for the kept task specs that take it as an
    /// argument (see the module docs).
    released: bool,
    /// Kept task specs taking it as an argument.
    lineage_refs: u32,
    status: Status,
    cold: Option<Box<Cold>>,
}

#[derive(Debug, Default)]
struct Cold {
    /// Other processes holding the ref; each must report it gone.
    borrowers: Vec<WorkerId>,
    /// Owned refs inside this object's value, kept in scope while it is.
    contained: Vec<ObjectId>,
}

impl Entry {
    fn in_scope(&self) -> bool {
        self.local > 0
            || self.submitted > 0
            || self.contained_in > 0
            || self.cold.as_ref().is_some_and(|c| !c.borrowers.is_empty())
    }

    fn cold(&mut self) -> &mut Cold {
        self.cold.get_or_insert_with(Default::default)
    }
}

/// The objects one process owns.
#[derive(Debug, Default)]
pub struct OwnershipTable {
    objects: DetMap<ObjectId, Entry>,
    out: VecDeque<Output>,
}

impl OwnershipTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a new object with one local reference (the handle returned to the user).
    pub fn add_owned(&mut self, id: ObjectId, status: Status) {
        let entry = Entry {
            local: 1,
            submitted: 0,
            contained_in: 0,
            lineage_evicted: false,
            released: false,
            lineage_refs: 0,
            status,
            cold: None,
        };
        self.objects.insert(id, entry);
    }

    /// One more local handle family. Returns whether the object is tracked here.
    pub fn add_local_ref(&mut self, id: ObjectId) -> bool {
        match self.objects.get_mut(&id) {
            Some(e) if !e.released => {
                e.local += 1;
                true
            }
            _ => false,
        }
    }

    /// One local handle family fewer; may free the object.
    pub fn remove_local_ref(&mut self, id: ObjectId) {
        if let Some(e) = self.objects.get_mut(&id) {
            e.local = e.local.saturating_sub(1);
            self.maybe_free(id);
        }
    }

    /// A submitted task takes these objects as arguments (an ID may repeat).
    pub fn add_submitted(&mut self, ids: &[ObjectId]) {
        for id in ids {
            if let Some(e) = self.objects.get_mut(id) {
                e.submitted += 1;
            }
        }
    }

    /// A task that took these arguments finished or failed for good.
    pub fn remove_submitted(&mut self, ids: &[ObjectId]) {
        for id in ids {
            if let Some(e) = self.objects.get_mut(id) {
                e.submitted = e.submitted.saturating_sub(1);
                self.maybe_free(*id);
            }
        }
    }

    /// `outer`'s value contains the refs `inner`: they stay in scope while `outer` does.
    /// Refs this table does not track (owned elsewhere) are ignored.
    pub fn add_contained(&mut self, outer: ObjectId, inner: &[ObjectId]) {
        let mut kept = Vec::with_capacity(inner.len());
        for id in inner {
            if *id != outer
                && let Some(e) = self.objects.get_mut(id)
            {
                e.contained_in += 1;
                kept.push(*id);
            }
        }
        match self.objects.get_mut(&outer) {
            Some(e) => e.cold().contained.extend(kept),
            // The outer object is already gone: nothing keeps the inner refs.
            None => self.release_contained(kept),
        }
    }

    /// Another process holds the ref; the object stays in scope until it reports the
    /// ref gone with [`OwnershipTable::remove_borrower`].
    /// Returns whether the object is tracked here (else the borrower is not counted:
    /// the object is gone, or was never this process's).
    pub fn add_borrower(&mut self, id: ObjectId, borrower: WorkerId) -> bool {
        let Some(e) = self.objects.get_mut(&id).filter(|e| !e.released) else { return false };
        if !e.cold().borrowers.contains(&borrower) {
            e.cold().borrowers.push(borrower);
        }
        true
    }

    /// A borrower no longer holds the ref; may free the object.
    pub fn remove_borrower(&mut self, id: ObjectId, borrower: WorkerId) {
        if let Some(e) = self.objects.get_mut(&id) {
            if let Some(c) = &mut e.cold {
                c.borrowers.retain(|b| *b != borrower);
            }
            self.maybe_free(id);
        }
    }

    /// A borrower died: it holds nothing any more; may free objects.
    pub fn remove_borrower_everywhere(&mut self, borrower: WorkerId) {
        let held: Vec<ObjectId> = self
            .objects
            .iter()
            .filter(|(_, e)| e.cold.as_ref().is_some_and(|c| c.borrowers.contains(&borrower)))
            .map(|(id, _)| *id)
            .collect();
        for id in held {
            self.remove_borrower(id, borrower);
        }
    }

    /// The object's value is available. If nobody refers to it anymore it is freed at
    /// once; a value for an object nobody tracks (already freed, or never ours) is freed
    /// too, so it cannot leak.
    pub fn set_ready(&mut self, id: ObjectId, location: Location) {
        match self.objects.get_mut(&id) {
            Some(e) => {
                e.status = Status::Ready(location);
                self.maybe_free(id);
            }
            None => self.out.push_back(Output::Free { id, location: Some(location) }),
        }
    }

    /// The node's store spilled the primary copy of a ready object to `url`.
    pub fn set_spilled(&mut self, id: ObjectId, url: String) {
        if let Some(Entry { status: Status::Ready(Location::Stored(s)), .. }) = self.objects.get_mut(&id) {
            s.spilled = Some(url);
        }
    }

    /// `node` now holds a secondary copy of a ready stored object.
    pub fn add_copy(&mut self, id: ObjectId, node: NodeId) {
        if let Some(Entry { status: Status::Ready(Location::Stored(s)), .. }) = self.objects.get_mut(&id)
            && s.primary != node
            && !s.secondary.contains(&node)
        {
            s.secondary.push(node);
        }
    }

    /// `node` may hold a copy of a ready stored object that no reply reported (see
    /// [`Stored::maybe`]).
    pub fn add_maybe_copy(&mut self, id: ObjectId, node: NodeId) {
        if let Some(Entry { status: Status::Ready(Location::Stored(s)), .. }) = self.objects.get_mut(&id)
            && !s.nodes().any(|n| n == node)
            && !s.maybe.contains(&node)
        {
            s.maybe.push(node);
        }
    }

    /// The object's task failed for good.
    pub fn set_failed(&mut self, id: ObjectId, error: TaskError) {
        if let Some(e) = self.objects.get_mut(&id) {
            e.status = Status::Failed(Box::new(error));
            self.maybe_free(id);
        }
    }

    /// The task that could rebuild the object is no longer kept. A released object
    /// goes: it could never be rebuilt.
    pub fn evict_lineage(&mut self, id: ObjectId) {
        if let Some(e) = self.objects.get_mut(&id)
            && !id.is_put()
        {
            e.lineage_evicted = true;
            if e.released {
                self.objects.remove(&id);
                self.out.push_back(Output::Free { id, location: None });
            }
        }
    }

    /// A kept task spec takes these objects as arguments: they keep an entry (released,
    /// once out of scope) while it is kept. Objects made by `put` are not kept this way
    /// (they could not be rebuilt anyway).
    pub fn add_lineage_refs(&mut self, ids: &[ObjectId]) {
        for id in ids.iter().filter(|id| !id.is_put()) {
            if let Some(e) = self.objects.get_mut(id) {
                e.lineage_refs += 1;
            }
        }
    }

    /// A kept task spec that took these arguments was dropped; released objects nothing
    /// else refers to go.
    pub fn remove_lineage_refs(&mut self, ids: &[ObjectId]) {
        for id in ids.iter().filter(|id| !id.is_put()) {
            if let Some(e) = self.objects.get_mut(id) {
                e.lineage_refs = e.lineage_refs.saturating_sub(1);
                if e.released && e.lineage_refs == 0 {
                    self.objects.remove(id);
                    self.out.push_back(Output::Free { id: *id, location: None });
                }
            }
        }
    }

    /// The object's task is run again to rebuild it: it is pending (and in scope again
    /// if it was released, through the tasks that will take it). Returns its location
    /// before, whose remaining copies the caller deletes, or `None` if it is not tracked.
    pub fn restart(&mut self, id: ObjectId) -> Option<Option<Location>> {
        let e = self.objects.get_mut(&id)?;
        e.released = false;
        let before = std::mem::replace(&mut e.status, Status::Pending);
        Some(if let Status::Ready(l) = before { Some(l) } else { None })
    }

    /// Whether the object was released (value freed, entry kept for lineage).
    pub fn is_released(&self, id: ObjectId) -> bool {
        self.objects.get(&id).is_some_and(|e| e.released)
    }

    /// Whether the table has an entry for the object (in scope or released).
    pub fn tracks(&self, id: ObjectId) -> bool {
        self.objects.contains_key(&id)
    }

    /// `node` died: its copies are gone. Returns the ready objects that had no other
    /// copy (their value is lost; their status is left for the caller to decide).
    pub fn take_lost(&mut self, node: NodeId) -> Vec<ObjectId> {
        let mut lost = Vec::new();
        for (id, e) in self.objects.iter_mut() {
            if let Status::Ready(Location::Stored(s)) = &mut e.status
                && !e.released
                && drop_copies(s, &[node])
            {
                lost.push(*id);
            }
        }
        lost
    }

    /// No copy of the object could be read from `nodes` (every pull failed). Returns
    /// whether the object is ready, stored and now has no copy left.
    pub fn copies_unreachable(&mut self, id: ObjectId, nodes: &[NodeId]) -> bool {
        match self.objects.get_mut(&id) {
            Some(Entry { status: Status::Ready(Location::Stored(s)), released: false, .. }) => drop_copies(s, nodes),
            _ => false,
        }
    }

    /// The object's status, if this process owns it and it is in scope.
    pub fn status(&self, id: ObjectId) -> Option<&Status> {
        self.objects.get(&id).filter(|e| !e.released).map(|e| &e.status)
    }

    /// How the object could be rebuilt.
    pub fn lineage(&self, id: ObjectId) -> Option<Lineage> {
        self.objects.get(&id).map(|e| if e.lineage_evicted { Lineage::Evicted } else { Lineage::of(id) })
    }

    /// The processes borrowing the object.
    pub fn borrowers(&self, id: ObjectId) -> &[WorkerId] {
        self.objects.get(&id).and_then(|e| e.cold.as_ref()).map_or(&[], |c| &c.borrowers[..])
    }

    /// Number of objects tracked (released ones included).
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object is tracked.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The next effect to carry out.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Forgets everything (at shutdown): every value still held becomes a `Free`.
    pub fn drain(&mut self) {
        let all: Vec<_> = self.objects.drain().collect();
        for (id, e) in all {
            let location = if let Status::Ready(l) = e.status { Some(l) } else { None };
            self.out.push_back(Output::Free { id, location });
        }
    }

    fn maybe_free(&mut self, id: ObjectId) {
        if let Some(inner) = self.free_if_unused(id) {
            self.release_contained(inner);
        }
    }

    /// Frees `id` if nothing holds it and its value is known (a pending object out of
    /// scope keeps its record until its task reports, so the value is freed then).
    /// Returns the refs its value contained, which it held.
    fn free_if_unused(&mut self, id: ObjectId) -> Option<Vec<ObjectId>> {
        let e = self.objects.get_mut(&id)?;
        if e.in_scope() || e.released || matches!(e.status, Status::Pending) {
            return None;
        }
        let contained = e.cold.take().map(|c| c.contained).unwrap_or_default();
        // Kept for lineage: only a ready value can be remade, and only by its task.
        if e.lineage_refs > 0 && !e.lineage_evicted && matches!(e.status, Status::Ready(_)) {
            e.released = true;
            let location = match std::mem::replace(&mut e.status, Status::Pending) {
                Status::Ready(l) => Some(l),
                _ => None,
            };
            self.out.push_back(Output::Free { id, location });
            return Some(contained);
        }
        let e = self.objects.remove(&id).expect("present");
        let location = if let Status::Ready(l) = e.status { Some(l) } else { None };
        self.out.push_back(Output::Free { id, location });
        Some(contained)
    }

    fn release_contained(&mut self, inner: Vec<ObjectId>) {
        // Iterative: a long chain of nested values must not recurse deeply.
        let mut stack = inner;
        while let Some(id) = stack.pop() {
            let Some(e) = self.objects.get_mut(&id) else {
                continue;
            };
            e.contained_in = e.contained_in.saturating_sub(1);
            stack.extend(self.free_if_unused(id).unwrap_or_default());
        }
    }
}

/// Removes `nodes` from the copies of `s`; returns whether no copy is left (a spilled
/// primary is on its node's disk, so it goes with the node).
fn drop_copies(s: &mut Stored, nodes: &[NodeId]) -> bool {
    s.secondary.retain(|n| !nodes.contains(n));
    if nodes.contains(&s.primary) {
        match s.secondary.first().copied() {
            Some(next) => {
                s.secondary.remove(0);
                s.primary = next;
                s.spilled = None;
            }
            None => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u64) -> ObjectId {
        ObjectId::for_return(TaskId::root(Default::default()).child(n), 0)
    }
    fn stored() -> Location {
        Location::stored(NodeId([1; 16]), 10)
    }
    fn frees(t: &mut OwnershipTable) -> Vec<ObjectId> {
        let mut out = Vec::new();
        while let Some(Output::Free { id, .. }) = t.poll() {
            out.push(id);
        }
        out
    }

    #[test]
    fn freed_when_last_local_ref_goes() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        assert!(t.add_local_ref(oid(1)));
        t.remove_local_ref(oid(1));
        assert!(t.poll().is_none());
        t.remove_local_ref(oid(1));
        match t.poll() {
            Some(Output::Free { id, location: Some(Location::Stored(s)) }) => {
                assert_eq!(id, oid(1));
                assert_eq!(s.len, 10);
            }
            other => panic!("{other:?}"),
        }
        assert!(t.is_empty());
        t.remove_local_ref(oid(1));
        assert!(t.poll().is_none(), "double drop is harmless");
        assert!(!t.add_local_ref(oid(1)), "a freed object is not revived");
    }

    #[test]
    fn submitted_task_holds_its_arguments() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_submitted(&[oid(1), oid(1)]);
        t.remove_local_ref(oid(1));
        t.remove_submitted(&[oid(1)]);
        assert!(frees(&mut t).is_empty());
        t.remove_submitted(&[oid(1)]);
        assert_eq!(frees(&mut t), vec![oid(1)]);
        assert!(t.is_empty());
    }

    #[test]
    fn out_of_scope_pending_object_is_freed_when_it_arrives() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Pending);
        t.remove_local_ref(oid(1));
        assert!(frees(&mut t).is_empty());
        assert_eq!(t.len(), 1);
        t.set_ready(oid(1), stored());
        assert_eq!(frees(&mut t), vec![oid(1)]);
        assert!(t.is_empty());
        // A late result for an object nobody tracks is freed too.
        t.set_ready(oid(2), stored());
        assert_eq!(frees(&mut t), vec![oid(2)]);
    }

    #[test]
    fn failed_objects_free_without_location() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Pending);
        t.set_failed(oid(1), TaskError::RuntimeShutdown);
        assert!(t.poll().is_none());
        assert!(matches!(t.status(oid(1)), Some(Status::Failed(_))));
        t.remove_local_ref(oid(1));
        assert!(matches!(t.poll(), Some(Output::Free { location: None, .. })));
    }

    #[test]
    fn contained_refs_live_as_long_as_the_outer_object_even_nested() {
        let mut t = OwnershipTable::new();
        for i in 1..=3 {
            t.add_owned(oid(i), Status::Ready(stored()));
        }
        // 3 contains 2, which contains 1.
        t.add_contained(oid(2), &[oid(1)]);
        t.add_contained(oid(3), &[oid(2)]);
        t.remove_local_ref(oid(1));
        t.remove_local_ref(oid(2));
        assert!(frees(&mut t).is_empty());
        t.remove_local_ref(oid(3));
        let mut freed = frees(&mut t);
        freed.sort();
        let mut want = vec![oid(1), oid(2), oid(3)];
        want.sort();
        assert_eq!(freed, want);
        assert!(t.is_empty());
    }

    #[test]
    fn refs_contained_in_an_object_already_gone_are_released() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_contained(oid(9), &[oid(1)]);
        t.remove_local_ref(oid(1));
        assert_eq!(frees(&mut t), vec![oid(1)]);
    }

    #[test]
    fn borrowers_keep_an_object_until_each_reports() {
        let mut t = OwnershipTable::new();
        let b = |n: u8| WorkerId([n; 16]);
        t.add_owned(oid(1), Status::Ready(stored()));
        assert!(t.add_borrower(oid(1), b(1)));
        assert!(t.add_borrower(oid(1), b(2)));
        assert!(t.add_borrower(oid(1), b(2)));
        assert!(!t.add_borrower(oid(7), b(2)), "not tracked here");
        assert_eq!(t.borrowers(oid(1)).len(), 2);
        t.remove_local_ref(oid(1));
        t.remove_borrower(oid(1), b(1));
        assert!(frees(&mut t).is_empty());
        t.remove_borrower(oid(1), b(3));
        assert!(frees(&mut t).is_empty(), "a stranger's report changes nothing");
        t.remove_borrower(oid(1), b(2));
        assert_eq!(frees(&mut t), vec![oid(1)]);
    }

    #[test]
    fn a_dead_borrower_releases_everything_it_held() {
        let mut t = OwnershipTable::new();
        let b = WorkerId([5; 16]);
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_owned(oid(2), Status::Pending);
        t.add_borrower(oid(1), b);
        t.add_borrower(oid(2), b);
        t.remove_local_ref(oid(1));
        t.remove_local_ref(oid(2));
        assert!(frees(&mut t).is_empty());
        t.remove_borrower_everywhere(b);
        assert_eq!(frees(&mut t), vec![oid(1)]);
        assert_eq!(t.len(), 1, "a pending object waits for its value");
    }

    #[test]
    fn copies_and_spills_are_recorded_per_node() {
        let mut t = OwnershipTable::new();
        let (n1, n2) = (NodeId([1; 16]), NodeId([2; 16]));
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_copy(oid(1), n2);
        t.add_copy(oid(1), n2);
        t.add_copy(oid(1), n1);
        t.set_spilled(oid(1), "file:///x?offset=0&size=10".into());
        let Some(Status::Ready(Location::Stored(s))) = t.status(oid(1)) else { panic!() };
        assert_eq!(s.nodes().collect::<Vec<_>>(), vec![n1, n2]);
        assert!(s.spilled.is_some());
    }

    #[test]
    fn lineage_follows_how_the_object_was_made() {
        let mut t = OwnershipTable::new();
        let put = ObjectId::for_put(TaskId::root(Default::default()), 0);
        t.add_owned(put, Status::Pending);
        t.add_owned(oid(1), Status::Pending);
        assert_eq!(t.lineage(put), Some(Lineage::Put));
        assert_eq!(t.lineage(oid(1)), Some(Lineage::Task(oid(1).task)));
        t.evict_lineage(oid(1));
        t.evict_lineage(put);
        assert_eq!(t.lineage(oid(1)), Some(Lineage::Evicted));
        assert_eq!(t.lineage(put), Some(Lineage::Put));
    }

    #[test]
    fn drain_frees_everything() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_owned(oid(2), Status::Pending);
        t.drain();
        assert_eq!(frees(&mut t).len(), 2);
        assert!(t.is_empty());
    }

    #[test]
    fn an_object_only_lineage_refers_to_is_released_then_goes_with_the_last_spec() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_lineage_refs(&[oid(1)]);
        t.add_lineage_refs(&[oid(1)]);
        t.remove_local_ref(oid(1));
        match t.poll() {
            Some(Output::Free { id, location: Some(_) }) => assert_eq!(id, oid(1)),
            other => panic!("the value is freed at once, got {other:?}"),
        }
        assert!(t.status(oid(1)).is_none(), "a released object is invisible");
        assert!(t.tracks(oid(1)) && t.is_released(oid(1)));
        assert!(!t.add_local_ref(oid(1)), "nobody can hold a released object again");
        t.remove_lineage_refs(&[oid(1)]);
        assert!(t.poll().is_none());
        t.remove_lineage_refs(&[oid(1)]);
        assert!(matches!(t.poll(), Some(Output::Free { location: None, .. })));
        assert!(t.is_empty());
    }

    #[test]
    fn a_restarted_object_is_pending_and_freed_again_when_done() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_lineage_refs(&[oid(1)]);
        t.remove_local_ref(oid(1));
        assert_eq!(frees(&mut t), vec![oid(1)]);
        assert!(matches!(t.restart(oid(1)), Some(None)), "a released object has no location left");
        t.add_submitted(&[oid(1)]);
        assert!(matches!(t.status(oid(1)), Some(Status::Pending)));
        t.set_ready(oid(1), stored());
        assert!(frees(&mut t).is_empty(), "the task that needs it holds it");
        t.remove_submitted(&[oid(1)]);
        assert_eq!(frees(&mut t), vec![oid(1)]);
        assert!(t.is_released(oid(1)), "still referred to by lineage");
        assert!(t.restart(oid(9)).is_none());
    }

    #[test]
    fn put_objects_and_failed_ones_are_not_kept_for_lineage() {
        let mut t = OwnershipTable::new();
        let put = ObjectId::for_put(TaskId::root(Default::default()), 0);
        t.add_owned(put, Status::Ready(stored()));
        t.add_owned(oid(2), Status::Failed(Box::new(TaskError::RuntimeShutdown)));
        t.add_lineage_refs(&[put, oid(2)]);
        t.remove_local_ref(put);
        t.remove_local_ref(oid(2));
        assert_eq!(frees(&mut t).len(), 2);
        assert!(t.is_empty());
    }

    #[test]
    fn evicting_the_lineage_of_a_released_object_removes_it() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(stored()));
        t.add_lineage_refs(&[oid(1)]);
        t.remove_local_ref(oid(1));
        assert_eq!(frees(&mut t), vec![oid(1)]);
        t.evict_lineage(oid(1));
        assert!(matches!(t.poll(), Some(Output::Free { location: None, .. })));
        assert!(t.is_empty());
    }

    #[test]
    fn a_dead_node_loses_the_objects_it_alone_held() {
        let mut t = OwnershipTable::new();
        let (n1, n2) = (NodeId([1; 16]), NodeId([2; 16]));
        t.add_owned(oid(1), Status::Ready(Location::stored(n1, 10)));
        t.add_owned(oid(2), Status::Ready(Location::stored(n1, 10)));
        t.add_copy(oid(2), n2);
        t.add_owned(oid(3), Status::Ready(Location::stored(n2, 10)));
        t.add_copy(oid(3), n1);
        t.add_owned(oid(4), Status::Ready(Location::Inline(Arc::new(Bytes::new()))));
        assert_eq!(t.take_lost(n1), vec![oid(1)]);
        let Some(Status::Ready(Location::Stored(s))) = t.status(oid(2)) else { panic!() };
        assert_eq!((s.primary, s.secondary.len()), (n2, 0), "the copy became the primary");
        let Some(Status::Ready(Location::Stored(s))) = t.status(oid(3)) else { panic!() };
        assert_eq!(s.nodes().collect::<Vec<_>>(), vec![n2]);
        assert!(t.copies_unreachable(oid(3), &[n2]));
        assert!(!t.copies_unreachable(oid(4), &[n1, n2]), "an inline value is never lost");
    }
}
