//! The object manager's decisions: which objects this node is pulling from other nodes,
//! who waits for each, and which source to try next. A pure state machine; the driver
//! (`object_manager.rs`) moves the bytes.
//!
//! Requests for an object already being pulled join that pull (one transfer however
//! many tasks need it). A failed transfer moves on to the next source; when every source
//! failed, every waiter gets `ObjectLost` naming the object and the nodes tried.

use ares_common::ClientId;
use ares_common::RequestId;
use ares_common::det::DetMap;
use ares_common::error::TaskError;
use ares_common::{NodeId, ObjectId};

/// What the driver must do.
#[derive(Debug, PartialEq)]
pub enum PullOutput {
    /// Transfer `object` from `node` into this node's store, then report with
    /// [`PullManager::finished`].
    Start {
        /// The object.
        object: ObjectId,
        /// The node to pull it from.
        node: NodeId,
    },
    /// Answer a waiter.
    Done {
        /// Who asked.
        client: ClientId,
        /// Their request.
        request_id: RequestId,
        /// `None`: the object is in this node's store now.
        error: Option<TaskError>,
    },
}

#[derive(Debug)]
struct Pull {
    waiters: Vec<(ClientId, RequestId)>,
    /// Sources not tried yet, in order.
    rest: Vec<NodeId>,
    /// Sources tried, with why each failed.
    failures: Vec<String>,
    /// The sources tried.
    tried: Vec<NodeId>,
    /// The source being tried (a transfer that ends from another is stale: ignored).
    current: Option<NodeId>,
}

/// Pulls in progress. See the module docs.
#[derive(Debug, Default)]
pub struct PullManager {
    pulls: DetMap<ObjectId, Pull>,
    started: u64,
}

impl PullManager {
    /// No pull in progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pulls started so far (shared requests count once).
    pub fn started(&self) -> u64 {
        self.started
    }

    /// Whether `object` is being pulled.
    pub fn in_progress(&self, object: ObjectId) -> bool {
        self.pulls.contains_key(&object)
    }

    /// `client` asks for a local copy of `object`, stored at `from`. `local` says whether
    /// this node already has it.
    pub fn request(
        &mut self,
        client: ClientId,
        request_id: RequestId,
        object: ObjectId,
        from: Vec<NodeId>,
        local: bool,
    ) -> Vec<PullOutput> {
        // First: the copy a pull is still writing is in the store, but not readable yet.
        if let Some(p) = self.pulls.get_mut(&object) {
            p.waiters.push((client, request_id));
            // Its sources are tried too (last): a failure then covers every one it named.
            for n in from {
                if p.current != Some(n) && !p.rest.contains(&n) && !p.tried.contains(&n) {
                    p.rest.insert(0, n);
                }
            }
            return Vec::new();
        }
        if local {
            return vec![PullOutput::Done { client, request_id, error: None }];
        }
        let mut rest = from;
        rest.dedup();
        rest.reverse(); // popped from the back: first source first
        let pull =
            Pull { waiters: vec![(client, request_id)], rest, failures: Vec::new(), tried: Vec::new(), current: None };
        self.pulls.insert(object, pull);
        self.next_source(object)
    }

    /// The transfer of `object` from `node` ended (`Err`: why it failed).
    pub fn finished(&mut self, object: ObjectId, node: NodeId, result: Result<(), String>) -> Vec<PullOutput> {
        if self.pulls.get(&object).is_some_and(|p| p.current != Some(node)) {
            // A transfer given up on when its node died: the pull moved on.
            return Vec::new();
        }
        match result {
            Ok(()) => {
                let Some(p) = self.pulls.remove(&object) else { return Vec::new() };
                p.waiters
                    .into_iter()
                    .map(|(client, request_id)| PullOutput::Done { client, request_id, error: None })
                    .collect()
            }
            Err(reason) => {
                if let Some(p) = self.pulls.get_mut(&object) {
                    p.failures.push(format!("node {node}: {reason}"));
                    p.tried.push(node);
                }
                self.next_source(object)
            }
        }
    }

    /// Tries the next source of `object`, or fails its waiters when none is left.
    fn next_source(&mut self, object: ObjectId) -> Vec<PullOutput> {
        let Some(p) = self.pulls.get_mut(&object) else { return Vec::new() };
        if let Some(node) = p.rest.pop() {
            p.current = Some(node);
            self.started += 1;
            return vec![PullOutput::Start { object, node }];
        }
        let p = self.pulls.remove(&object).expect("present above");
        let why = if p.failures.is_empty() { "no node holds a copy".to_string() } else { p.failures.join("; ") };
        let error = TaskError::ObjectLost { object: format!("{object} (could not pull a copy: {why})") };
        p.waiters
            .into_iter()
            .map(|(client, request_id)| PullOutput::Done { client, request_id, error: Some(error.clone()) })
            .collect()
    }

    /// `node` died: transfers from it are given up at once (they would wait for the
    /// connection to time out) and their pulls move on to the next source.
    pub fn node_died(&mut self, node: NodeId) -> Vec<PullOutput> {
        let from: Vec<ObjectId> =
            self.pulls.iter().filter(|(_, p)| p.current == Some(node)).map(|(id, _)| *id).collect();
        let mut out = Vec::new();
        for object in from {
            out.extend(self.finished(object, node, Err("the node died".into())));
        }
        out
    }

    /// `client` is gone: its waits end (the pulls go on; their copies stay here).
    pub fn client_gone(&mut self, client: ClientId) {
        for p in self.pulls.values_mut() {
            p.waiters.retain(|(c, _)| *c != client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn obj() -> ObjectId {
        ObjectId::for_put(TaskId([3; 16]), 0)
    }

    #[test]
    fn concurrent_requests_share_one_pull_and_all_are_answered() {
        let mut m = PullManager::new();
        let (a, b) = (NodeId([1; 16]), NodeId([2; 16]));
        assert_eq!(
            m.request(ClientId(1), RequestId(10), obj(), vec![a, b], false),
            vec![PullOutput::Start { object: obj(), node: a }]
        );
        for i in 2..=10 {
            // The copy being written is in the store already: still wait for the pull.
            let local = i % 2 == 0;
            assert!(m.request(ClientId(i), RequestId(10 + i), obj(), vec![a, b], local).is_empty());
        }
        assert_eq!(m.started(), 1);
        let done = m.finished(obj(), a, Ok(()));
        assert_eq!(done.len(), 10);
        assert!(done.iter().all(|d| matches!(d, PullOutput::Done { error: None, .. })));
        assert!(!m.in_progress(obj()));
        // Already here: answered at once, no pull.
        assert_eq!(
            m.request(ClientId(1), RequestId(99), obj(), vec![a], true),
            vec![PullOutput::Done { client: ClientId(1), request_id: RequestId(99), error: None }]
        );
        assert_eq!(m.started(), 1);
    }

    #[test]
    fn a_failed_transfer_tries_the_next_copy_then_fails_naming_every_node() {
        let mut m = PullManager::new();
        let (a, b) = (NodeId([1; 16]), NodeId([2; 16]));
        m.request(ClientId(1), RequestId(1), obj(), vec![a, b], false);
        m.request(ClientId(2), RequestId(2), obj(), vec![a, b], false);
        m.client_gone(ClientId(2));
        assert_eq!(
            m.finished(obj(), a, Err("connection lost".into())),
            vec![PullOutput::Start { object: obj(), node: b }]
        );
        let out = m.finished(obj(), b, Err("no such object".into()));
        match &out[..] {
            [
                PullOutput::Done {
                    client: ClientId(1),
                    request_id: RequestId(1),
                    error: Some(TaskError::ObjectLost { object }),
                },
            ] => {
                assert!(object.contains("connection lost") && object.contains("no such object"), "{object}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(m.request(ClientId(3), RequestId(3), obj(), vec![], false).len(), 1, "no source: fails at once");
    }

    #[test]
    fn a_request_joining_a_pull_adds_its_sources_so_a_failure_covers_them() {
        let mut m = PullManager::new();
        let (a, b, c) = (NodeId([1; 16]), NodeId([2; 16]), NodeId([3; 16]));
        assert_eq!(
            m.request(ClientId(1), RequestId(1), obj(), vec![a], false),
            vec![PullOutput::Start { object: obj(), node: a }]
        );
        assert!(
            m.request(ClientId(2), RequestId(2), obj(), vec![b, a, c], true).is_empty(),
            "joins, though a copy is here"
        );
        assert_eq!(m.finished(obj(), a, Err("gone".into())), vec![PullOutput::Start { object: obj(), node: b }]);
        assert_eq!(m.finished(obj(), b, Err("gone".into())), vec![PullOutput::Start { object: obj(), node: c }]);
        let done = m.finished(obj(), c, Err("gone".into()));
        assert_eq!(done.len(), 2, "both waiters hear, after all three were tried: {done:?}");
    }

    #[test]
    fn a_transfer_from_a_node_that_died_is_given_up_and_its_late_end_ignored() {
        let mut m = PullManager::new();
        let (a, b) = (NodeId([1; 16]), NodeId([2; 16]));
        m.request(ClientId(1), RequestId(1), obj(), vec![a, b], false);
        assert!(m.node_died(b).is_empty(), "nothing is pulled from b yet");
        assert_eq!(m.node_died(a), vec![PullOutput::Start { object: obj(), node: b }]);
        assert!(m.finished(obj(), a, Err("timed out".into())).is_empty(), "the stale transfer is ignored");
        assert!(m.in_progress(obj()));
        let done = m.finished(obj(), b, Ok(()));
        assert_eq!(done, vec![PullOutput::Done { client: ClientId(1), request_id: RequestId(1), error: None }]);
    }
}
