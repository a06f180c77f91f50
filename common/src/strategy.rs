//! Scheduling strategies: how a task or actor asks to be placed in the cluster.

use crate::NodeId;

/// How a task or actor asks to be placed in the cluster (Ray's scheduling strategies).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub enum Strategy {
    /// Hybrid: pack the local node up to the threshold, then spread.
    #[default]
    Default,
    /// Spread over nodes with room, least loaded first.
    Spread,
    /// Run on `node`. Soft: only while it has room, else as `Default`. Hard: there or
    /// nowhere (infeasible if that node is dead or unknown).
    NodeAffinity {
        /// The node asked for.
        node: NodeId,
        /// Whether another node may be used when it lacks room.
        soft: bool,
    },
}
