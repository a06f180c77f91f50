//! Borrowed objects whose location this process asked of their owners (the read side of
//! borrowing): one question per object however many `get`s and pending tasks need the
//! answer, the answer kept while any of them does, and a lookup failed with `OwnerDied`
//! when its owner is gone. [`crate::CoreState`] sends the questions and wakes what the
//! answers release.
//!
//! **Must not:** send anything or touch the task table; do IO.

use ares_common::det::DetMap;
use ares_common::wire::PeerLocation;
use ares_common::{ObjectId, TaskError};
use ares_ownership::{Location, Owner, Status, Stored};

struct Lookup {
    owner: Owner,
    /// `get`s and pending tasks that need the answer.
    holders: u32,
    status: Status,
}

#[derive(Default)]
pub(crate) struct Lookups {
    map: DetMap<ObjectId, Lookup>,
}

impl Lookups {
    /// One more holder of the lookup of `id`, if there is one; false if it must be begun
    /// ([`Lookups::begin`]).
    pub(crate) fn hold(&mut self, id: ObjectId) -> bool {
        match self.map.get_mut(&id) {
            Some(l) => {
                l.holders += 1;
                true
            }
            None => false,
        }
    }

    /// A lookup of `id` with its first holder: `Pending` once the question went to
    /// `owner`, or failed already.
    pub(crate) fn begin(&mut self, id: ObjectId, owner: Owner, status: Status) {
        self.map.insert(id, Lookup { owner, holders: 1, status });
    }

    /// A holder is done with the answer; the last one forgets it.
    pub(crate) fn end(&mut self, id: ObjectId) {
        if let Some(l) = self.map.get_mut(&id) {
            l.holders = l.holders.saturating_sub(1);
            if l.holders == 0 {
                self.map.remove(&id);
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn status(&self, id: ObjectId) -> Option<&Status> {
        self.map.get(&id).map(|l| &l.status)
    }

    /// The owner asked about `id`.
    pub(crate) fn owner(&self, id: ObjectId) -> Option<Owner> {
        self.map.get(&id).map(|l| l.owner)
    }

    /// The owner answered where `id` is. `None` if no lookup waited for it; else whether
    /// the value is ready (`Ok`) or failed.
    pub(crate) fn answered(&mut self, id: ObjectId, location: PeerLocation) -> Option<Result<(), TaskError>> {
        let l = self.map.get_mut(&id).filter(|l| matches!(l.status, Status::Pending))?;
        l.status = from_peer(id, l.owner, location);
        Some(match &l.status {
            Status::Failed(e) => Err((**e).clone()),
            _ => Ok(()),
        })
    }

    /// Owners matching `gone` are gone (`why`): their pending lookups fail with
    /// `OwnerDied`, returned with the error.
    pub(crate) fn owners_gone(&mut self, gone: impl Fn(&Owner) -> bool, why: &str) -> Vec<(ObjectId, TaskError)> {
        let mut failed = Vec::new();
        for (id, l) in self.map.iter_mut().filter(|(_, l)| gone(&l.owner) && matches!(l.status, Status::Pending)) {
            let e = owner_died(*id, l.owner, why);
            l.status = Status::Failed(Box::new(e.clone()));
            failed.push((*id, e));
        }
        failed
    }

    /// Every pending lookup fails with `error` (the process stopped).
    pub(crate) fn fail_pending(&mut self, error: &TaskError) {
        for l in self.map.values_mut().filter(|l| matches!(l.status, Status::Pending)) {
            l.status = Status::Failed(Box::new(error.clone()));
        }
    }
}

/// How an owner's answer reads as a location.
fn from_peer(object: ObjectId, owner: Owner, location: PeerLocation) -> Status {
    match location {
        PeerLocation::Inline(v) => Status::Ready(crate::interface::inline_location(&v)),
        PeerLocation::Stored { len, nodes } if !nodes.is_empty() => Status::Ready(Location::Stored(Box::new(Stored {
            len,
            primary: nodes[0],
            spilled: None,
            secondary: nodes[1..].to_vec(),
            maybe: Vec::new(),
        }))),
        PeerLocation::Failed(e) => Status::Failed(Box::new(e)),
        PeerLocation::Stored { .. } | PeerLocation::Unknown => Status::Failed(Box::new(TaskError::ObjectLost {
            object: format!("{object} (its owner, worker {} on node {}, no longer has it)", owner.worker, owner.node),
        })),
    }
}

pub(crate) fn owner_died(object: ObjectId, owner: Owner, why: &str) -> TaskError {
    TaskError::OwnerDied {
        object: object.to_string(),
        owner: format!("worker {} on node {}: {why}", owner.worker, owner.node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::{NodeId, TaskId, WorkerId};

    fn oid(n: u8) -> ObjectId {
        ObjectId::for_return(TaskId::root(uuid::Uuid::from_bytes([n; 16])), 0)
    }

    fn owner(n: u8) -> Owner {
        Owner { worker: WorkerId([n; 16]), node: NodeId([n; 16]) }
    }

    #[test]
    fn one_question_serves_every_holder_until_the_last_lets_go() {
        let mut l = Lookups::default();
        let id = oid(1);
        assert!(!l.hold(id));
        l.begin(id, owner(1), Status::Pending);
        assert!(l.hold(id));
        assert_eq!(l.answered(id, PeerLocation::Inline(vec![7])), Some(Ok(())));
        // A second answer (or one for nobody) changes nothing.
        assert_eq!(l.answered(id, PeerLocation::Unknown), None);
        assert!(matches!(l.status(id), Some(Status::Ready(Location::Inline(_)))));
        l.end(id);
        assert!(l.status(id).is_some());
        l.end(id);
        assert!(l.is_empty());
    }

    #[test]
    fn a_gone_owner_fails_only_its_pending_lookups() {
        let mut l = Lookups::default();
        let (a, b, c) = (oid(1), oid(2), oid(3));
        l.begin(a, owner(1), Status::Pending);
        l.begin(b, owner(1), Status::Pending);
        l.begin(c, owner(2), Status::Pending);
        assert_eq!(l.answered(b, PeerLocation::Inline(vec![1])), Some(Ok(())));
        let failed = l.owners_gone(|o| *o == owner(1), "it died");
        assert_eq!(failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![a]);
        assert!(matches!(&failed[0].1, TaskError::OwnerDied { owner, .. } if owner.ends_with("it died")));
        assert!(matches!(l.status(c), Some(Status::Pending)));
        l.fail_pending(&TaskError::RuntimeShutdown);
        assert!(matches!(l.status(c), Some(Status::Failed(_))));
    }
}
