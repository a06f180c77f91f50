//! A node's view of the cluster, as the head last sent it, and the placement decisions
//! made on it: where a lease request runs (here, spilled back to another node, or
//! nowhere), which address a spilled request or a pull goes to, and which nodes died
//! since the last view. A sub-machine of [`crate::node::Node`], which owns this node's
//! own resources and passes them in.
//!
//! **Must not:** know clients or leases; do IO.

use ares_common::det::DetSet;
use ares_common::error::TaskError;
use ares_common::wire::NodeSummary;
use ares_common::{NodeId, ResourceSet, Strategy};

use crate::spillback::{self, Decision};

/// The cluster as the head last described it (empty on a node outside a cluster).
pub struct ClusterView {
    nodes: Vec<NodeSummary>,
    /// Nodes seen alive and not reported dead since: kept across an empty view (the
    /// head's link lost), so a node that died meanwhile is reported once it is back.
    alive: DetSet<NodeId>,
    params: spillback::Params,
    /// Placements made so far (the spillback policy's tie-breaker).
    picks: u64,
}

/// This node's own figures, which are current where the view's are a heartbeat old.
pub struct Here<'a> {
    /// The node.
    pub id: NodeId,
    /// Its total resources.
    pub total: &'a ResourceSet,
    /// What is free now.
    pub available: &'a ResourceSet,
}

impl ClusterView {
    /// An empty view; requests stay on this node while utilisation is under `threshold`.
    pub fn new(threshold: f64) -> Self {
        ClusterView {
            nodes: Vec::new(),
            alive: DetSet::default(),
            params: spillback::Params { threshold, ..spillback::Params::default() },
            picks: 0,
        }
    }

    /// The nodes, as last described.
    pub fn nodes(&self) -> &[NodeSummary] {
        &self.nodes
    }

    /// Whether this node is part of a cluster (it has heard a view).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Takes a new view; returns the nodes that this one shows dead and that were last
    /// seen alive (in the last view, or before an empty one).
    pub fn set(&mut self, nodes: Vec<NodeSummary>) -> Vec<NodeId> {
        let mut died = Vec::new();
        for n in &nodes {
            if n.alive {
                self.alive.insert(n.node_id);
            } else if self.alive.remove(&n.node_id) {
                died.push(n.node_id);
            }
        }
        self.nodes = nodes;
        died
    }

    /// Where a lease request of `shape` runs. A node on its own, a request for an
    /// actor's worker (`dedicated`: actors stay on their owner's node for now) and a
    /// request another node sent here (`spilled`) that fits here are local.
    pub fn place(
        &mut self,
        here: Here<'_>,
        shape: &ResourceSet,
        strategy: &Strategy,
        dedicated: bool,
        spilled: bool,
    ) -> Decision {
        if self.nodes.is_empty() || dedicated {
            return Decision::Local;
        }
        let serving = self.nodes.iter().filter(|n| n.node_id == here.id || n.addr.is_some());
        let mut view = crate::cluster::view_of(serving);
        let Some(me) = view.iter_mut().find(|n| n.id == here.id) else {
            return Decision::Local;
        };
        me.alive = true;
        me.total = here.total.clone();
        me.available = here.available.clone();
        me.available.set(&here.id.resource_name(), 1.0);
        self.picks = self.picks.wrapping_add(1);
        spillback::decide(&view, here.id, shape, strategy, &self.params, spilled, self.picks)
    }

    /// The address a request spilled to `node` goes to, counting the request against
    /// the node until the next view, so a burst of requests does not all pick the same
    /// node (as Ray does). `None`: the node serves no address.
    pub fn reserve(&mut self, node: NodeId, shape: &ResourceSet) -> Option<std::net::SocketAddr> {
        let target = self.nodes.iter_mut().find(|n| n.node_id == node)?;
        target.load.available.sub(shape);
        target.addr
    }

    /// Where live node `node` serves pulls.
    pub fn pull_addr(&self, node: NodeId) -> Option<std::net::SocketAddr> {
        self.nodes.iter().find(|n| n.node_id == node && n.alive).and_then(|n| n.addr)
    }

    /// The error for a request no node of the cluster can hold; `total` is this node's.
    pub fn infeasible(&self, shape: &ResourceSet, strategy: &Strategy, total: &ResourceSet) -> TaskError {
        let best = self.nodes.iter().filter(|n| n.alive).map(|n| &n.total).max_by_key(|t| t.iter().count());
        let available = match strategy {
            Strategy::NodeAffinity { node, soft: false } => format!("node {node}, which is not a live node"),
            _ => best.map_or_else(|| total.to_string(), |t| t.to_string()),
        };
        TaskError::Infeasible {
            requested: shape.to_string(),
            missing: shape.shortfall(best.unwrap_or(total)).to_string(),
            available,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::wire::NodeLoad;

    fn node(i: u8, alive: bool) -> NodeSummary {
        let total = ResourceSet::new().with("CPU", 2.0);
        NodeSummary {
            node_id: NodeId([i; 16]),
            pid: i as u32,
            host: format!("h{i}"),
            addr: Some(std::net::SocketAddr::from(([127, 0, 0, i], 7000))),
            head: i == 1,
            alive,
            total: total.clone(),
            load: NodeLoad { available: total, ..NodeLoad::default() },
            silent_ms: 0,
            died: None,
        }
    }

    #[test]
    fn a_new_view_names_the_nodes_that_died_and_spilled_requests_count_against_their_target() {
        let mut v = ClusterView::new(0.5);
        assert!(v.set(vec![node(1, true), node(2, true)]).is_empty());
        let cpu = ResourceSet::new().with("CPU", 1.0);
        assert!(v.reserve(NodeId([2; 16]), &cpu).is_some());
        let left = &v.nodes()[1].load.available;
        assert_eq!(left.to_string(), ResourceSet::new().with("CPU", 1.0).to_string(), "one CPU counted as taken");
        assert_eq!(v.set(vec![node(1, true), node(2, false)]), vec![NodeId([2; 16])]);
        assert!(v.pull_addr(NodeId([2; 16])).is_none(), "a dead node serves no pulls");
        assert!(v.set(vec![node(1, true), node(2, false)]).is_empty(), "a death is reported once");
        // A node that dies while the head is out of reach (the view emptied) is reported
        // once the head's view comes back; one back alive can die again.
        assert!(v.set(vec![node(1, true), node(2, true), node(3, true)]).is_empty());
        assert!(v.set(Vec::new()).is_empty());
        assert_eq!(v.set(vec![node(1, true), node(2, false), node(3, true)]), vec![NodeId([2; 16])]);
        let big = ResourceSet::new().with("CPU", 8.0);
        let e = v.infeasible(&big, &Strategy::Default, &ResourceSet::new().with("CPU", 2.0));
        assert!(matches!(e, TaskError::Infeasible { .. }), "{e:?}");
    }
}
