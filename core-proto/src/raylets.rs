//! The raylets a core worker talks to: its own node's, and other nodes' at the addresses
//! spillback, borrowed refs and lookups named; which of those could not be reached
//! lately; and why its own raylet said it was going, if it did. A sub-machine of
//! [`crate::CoreState`].
//!
//! **Must not:** decide what to send (it only addresses messages); do IO.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ares_common::NodeId;
use ares_common::det::DetMap;
use ares_common::wire::ToRaylet;

use crate::Output;

/// A node whose raylet could not be reached is not asked again for this long; lease
/// requests spilled to it wait this long, until the cluster view says it is dead.
pub const UNREACHABLE_HOLD: Duration = Duration::from_millis(500);

/// The raylets of a core worker (see the module docs).
pub(crate) struct Raylets {
    here: NodeId,
    /// Where other nodes' raylets serve.
    addrs: DetMap<NodeId, SocketAddr>,
    /// Nodes whose raylet connection failed, and when.
    unreachable: DetMap<NodeId, Instant>,
    /// Why this node's daemon said it is stopping, if it did.
    goodbye: Option<String>,
}

impl Raylets {
    pub(crate) fn new(here: NodeId) -> Self {
        Raylets { here, addrs: DetMap::default(), unreachable: DetMap::default(), goodbye: None }
    }

    /// This process's own node.
    pub(crate) fn here(&self) -> NodeId {
        self.here
    }

    /// Where `node`'s raylet serves, if known (never this node's own).
    pub(crate) fn addr(&self, node: NodeId) -> Option<SocketAddr> {
        self.addrs.get(&node).copied()
    }

    /// Whether `node`'s raylet can be written to: this node's, or a known other.
    pub(crate) fn reachable(&self, node: NodeId) -> bool {
        node == self.here || self.addrs.contains_key(&node)
    }

    /// `node`'s raylet serves at `addr`, as a ref or lookup said (an address already
    /// known is kept).
    pub(crate) fn learn(&mut self, node: NodeId, addr: SocketAddr) {
        if node != self.here {
            self.addrs.entry(node).or_insert(addr);
        }
    }

    /// `node`'s raylet serves at `addr`, as a raylet's spillback said (it replaces what
    /// was known).
    pub(crate) fn set(&mut self, node: NodeId, addr: SocketAddr) {
        if node != self.here {
            self.addrs.insert(node, addr);
        }
    }

    /// The connection to `node`'s raylet failed or ended at `now`.
    pub(crate) fn lost(&mut self, node: NodeId, now: Instant) {
        self.addrs.remove(&node);
        self.unreachable.insert(node, now);
    }

    /// Whether `node`'s raylet could not be reached within [`UNREACHABLE_HOLD`].
    pub(crate) fn recently_unreachable(&self, node: NodeId, now: Instant) -> bool {
        self.unreachable.get(&node).is_some_and(|t| now.saturating_duration_since(*t) < UNREACHABLE_HOLD)
    }

    /// Forgets failures older than [`UNREACHABLE_HOLD`].
    pub(crate) fn expire(&mut self, now: Instant) {
        self.unreachable.retain(|_, t| now.saturating_duration_since(*t) < UNREACHABLE_HOLD);
    }

    /// This node's raylet said it is stopping, for `reason`.
    pub(crate) fn said_goodbye(&mut self, reason: String) {
        self.goodbye = Some(reason);
    }

    /// Why this node's raylet said it was stopping, once.
    pub(crate) fn take_goodbye(&mut self) -> Option<String> {
        self.goodbye.take()
    }

    /// Queues `msg` for the raylet of `node` (`None`: this node's). A node whose
    /// connection was lost is not written to: what the message was about died with it.
    pub(crate) fn send(&self, node: Option<NodeId>, msg: ToRaylet, out: &mut VecDeque<Output>) {
        match node {
            Some(n) if n != self.here => {
                if let Some(addr) = self.addrs.get(&n) {
                    out.push_back(Output::ToNode { node: n, addr: *addr, msg });
                }
            }
            _ => out.push_back(Output::ToRaylet(msg)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_lost_node_is_not_written_to_and_is_held_back_for_a_while() {
        let (here, other) = (NodeId([1; 16]), NodeId([2; 16]));
        let mut r = Raylets::new(here);
        let t0 = Instant::now();
        r.learn(here, addr(1));
        assert_eq!(r.addr(here), None, "its own raylet is reached locally");
        r.learn(other, addr(2));
        r.learn(other, addr(3));
        assert_eq!(r.addr(other), Some(addr(2)), "a ref does not move a known raylet");
        r.set(other, addr(3));
        assert_eq!(r.addr(other), Some(addr(3)), "spillback does");
        let mut out = VecDeque::new();
        r.send(Some(other), ToRaylet::TaskBlocked, &mut out);
        r.send(Some(here), ToRaylet::TaskBlocked, &mut out);
        assert!(matches!(out.pop_front(), Some(Output::ToNode { node, .. }) if node == other));
        assert!(matches!(out.pop_front(), Some(Output::ToRaylet(_))));
        r.lost(other, t0);
        assert!(!r.reachable(other) && r.reachable(here));
        r.send(Some(other), ToRaylet::TaskBlocked, &mut out);
        assert!(out.is_empty());
        assert!(r.recently_unreachable(other, t0 + UNREACHABLE_HOLD / 2));
        assert!(!r.recently_unreachable(other, t0 + UNREACHABLE_HOLD));
        r.expire(t0 + UNREACHABLE_HOLD);
        assert!(r.unreachable.is_empty());
    }
}
