//! Where a lease request should run in the cluster: Ray's hybrid spillback policy as a
//! pure function of a cluster view and a request. No IO, no clock, no randomness of its
//! own (the caller passes `pick`, so a decision can be replayed).
//!
//! The node that receives a request calls [`decide`] with its own ID and the resource
//! view the head broadcasts. The answer is [`Decision::Local`] (queue it here, the
//! [`crate::policy::LeasePolicy`] grants it when a worker is free), a node to spill back
//! to, or [`Decision::Infeasible`] when no live node could ever hold the shape.
//!
//! `Default` (hybrid): the local node wins while its utilisation after placing the
//! request stays under `threshold`. Otherwise nodes with room are ranked by that
//! utilisation, where every node under the threshold counts as equally idle (local
//! first among equals), and one of the best `top_k` is picked, spreading load without
//! herding every spiller onto the single emptiest node. When no node has room now, the
//! request waits locally if this node could ever hold it, else at the least loaded
//! feasible node.

pub use ares_common::Strategy;
use ares_common::{NodeId, ResourceSet};

/// One node as the resource view shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    /// The node.
    pub id: NodeId,
    /// Whether the head considers it alive.
    pub alive: bool,
    /// Its total resources (its `node:<id>` resource included).
    pub total: ResourceSet,
    /// Resources not held by leases.
    pub available: ResourceSet,
}

/// Tunables of the policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Utilisation under which the local node keeps work (Ray: 0.5).
    pub threshold: f64,
    /// Fraction of the live nodes among which a spilled request is spread (Ray: 0.2).
    pub top_k_fraction: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { threshold: 0.5, top_k_fraction: 0.2 }
    }
}

/// What to do with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Queue it on this node.
    Local,
    /// Tell the owner to ask this node instead.
    Spill(NodeId),
    /// No live node could ever hold it.
    Infeasible,
}

/// Decides where `shape` runs. `local` is the deciding node; `spilled` says the owner was
/// already sent here by another node, so this node queues it whenever it could ever hold
/// it: a second hop would be judged on the same heartbeat-old view that sent it here, and
/// could bounce it back. `pick` chooses among equally good nodes.
pub fn decide(
    view: &[NodeView],
    local: NodeId,
    shape: &ResourceSet,
    strategy: &Strategy,
    params: &Params,
    spilled: bool,
    pick: u64,
) -> Decision {
    let feasible = |n: &&NodeView| n.alive && shape.is_subset_of(&n.total);
    let has_room = |n: &&NodeView| feasible(n) && shape.is_subset_of(&n.available);
    let at = |id: NodeId| if id == local { Decision::Local } else { Decision::Spill(id) };
    let local_view = view.iter().find(|n| n.id == local);
    if !view.iter().any(|n| feasible(&n)) {
        return Decision::Infeasible;
    }
    if spilled && local_view.is_some_and(|n| feasible(&n)) {
        return Decision::Local;
    }
    match strategy {
        Strategy::NodeAffinity { node, soft } => {
            let target = view.iter().find(|n| n.id == *node);
            match target {
                Some(t) if !soft && feasible(&t) => return at(t.id),
                // Soft: queue there while it lives and could hold the request; judging
                // its room from a view a heartbeat old sent most of a placement
                // elsewhere (see docs/architecture.md, "Scheduling").
                Some(t) if *soft && feasible(&t) => return at(t.id),
                _ if !soft => return Decision::Infeasible,
                _ => {}
            }
        }
        Strategy::Spread => {
            let mut room: Vec<&NodeView> = view.iter().filter(has_room).collect();
            if !room.is_empty() {
                room.sort_by(|a, b| utilisation(a, shape).total_cmp(&utilisation(b, shape)).then(a.id.cmp(&b.id)));
                // Among the nodes tied for least loaded, rotate by `pick`.
                let best = utilisation(room[0], shape);
                let tied = room.iter().take_while(|n| utilisation(n, shape) <= best).count();
                return at(room[(pick % tied as u64) as usize].id);
            }
            return wait_somewhere(view, local, shape);
        }
        Strategy::Default => {}
    }
    if let Some(l) = local_view
        && has_room(&l)
        && utilisation(l, shape) < params.threshold
    {
        return Decision::Local;
    }
    let mut room: Vec<(f64, bool, &NodeView)> = view
        .iter()
        .filter(has_room)
        .map(|n| {
            let u = utilisation(n, shape);
            (if u < params.threshold { 0.0 } else { u }, n.id != local, n)
        })
        .collect();
    if room.is_empty() {
        return wait_somewhere(view, local, shape);
    }
    room.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.id.cmp(&b.2.id)));
    let alive = view.iter().filter(|n| n.alive).count();
    let top_k = ((alive as f64 * params.top_k_fraction).ceil() as usize).clamp(1, room.len());
    // Only nodes as good as the best are worth a pick: a worse one in the top k would
    // trade a free slot for a busier one.
    let best = room[0].0;
    let tied = room[..top_k].iter().take_while(|r| r.0 <= best).count();
    at(room[(pick % tied as u64) as usize].2.id)
}

/// No node has room now: wait here if this node could ever hold `shape`, else at the
/// least loaded node that could.
fn wait_somewhere(view: &[NodeView], local: NodeId, shape: &ResourceSet) -> Decision {
    let feasible = |n: &&NodeView| n.alive && shape.is_subset_of(&n.total);
    if view.iter().any(|n| n.id == local && feasible(&n)) {
        return Decision::Local;
    }
    view.iter()
        .filter(feasible)
        .min_by(|a, b| utilisation(a, shape).total_cmp(&utilisation(b, shape)).then(a.id.cmp(&b.id)))
        .map_or(Decision::Infeasible, |n| Decision::Spill(n.id))
}

/// The node's utilisation of its most used resource once `shape` is placed on it.
/// Resources the request does not name count too: a node whose CPUs are all taken is
/// busy even for a request that asks only for memory.
pub fn utilisation(n: &NodeView, shape: &ResourceSet) -> f64 {
    n.total
        .iter()
        .filter(|(name, _)| !name.starts_with("node:"))
        .map(|(name, total)| {
            let used = total.saturating_sub(n.available.get_units(name)) + shape.get_units(name);
            used as f64 / total.max(1) as f64
        })
        .fold(0.0, f64::max)
}

/// The node to ask first for a task whose arguments are stored at `args` (node, bytes):
/// the one holding the most bytes, ties to the lowest ID. `None` when no argument is in a
/// store (inline arguments have no place).
pub fn preferred_node(args: impl IntoIterator<Item = (NodeId, u64)>) -> Option<NodeId> {
    let mut bytes: Vec<(NodeId, u64)> = Vec::new();
    for (node, n) in args {
        match bytes.iter_mut().find(|(id, _)| *id == node) {
            Some(e) => e.1 += n,
            None => bytes.push((node, n)),
        }
    }
    bytes.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map(|(id, _)| id)
}
