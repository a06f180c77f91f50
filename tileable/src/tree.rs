//! Combine trees built as their leaves are added.

use crate::graph::{Graph, Hints};

/// Partials waiting to be combined, per output (a reduction tree each). Leaves are folded
/// `combine_size` at a time as soon as that many of one tree level exist, so a partial
/// lives only until its combiner has run.
pub struct Trees {
    /// Per output: `(node, tree level)` not combined yet.
    groups: Vec<Vec<(usize, u32)>>,
    combine_size: usize,
}

impl Trees {
    /// `outputs` trees, each combining `combine_size` (at least 2) partials per task.
    pub fn new(outputs: usize, combine_size: usize) -> Self {
        Trees { groups: vec![Vec::new(); outputs], combine_size: combine_size.max(2) }
    }

    /// Adds leaf `node` to tree `k`, adding the combine tasks it completes
    /// (`combine(inputs)` makes one; it runs at `depth` and the level it combines).
    pub fn push<T>(&mut self, g: &mut Graph<T>, k: usize, node: usize, depth: u32, mut combine: impl FnMut() -> T) {
        let c = self.combine_size;
        let group = &mut self.groups[k];
        let mut entry = (node, 1);
        loop {
            group.push(entry);
            let (n, level) = (group.len(), entry.1);
            if n < c || group[n - c..].iter().any(|&(_, l)| l != level) {
                break;
            }
            let parts: Vec<usize> = group.drain(n - c..).map(|(id, _)| id).collect();
            entry = (g.add(combine(), parts, Hints::new(depth, 0).level(level)), level + 1);
        }
    }

    /// Combines what is left of tree `k` into one node and returns it (a tree of one
    /// leaf is that leaf). Panics on a tree without leaves.
    pub fn root<T>(&mut self, g: &mut Graph<T>, k: usize, depth: u32, mut combine: impl FnMut() -> T) -> usize {
        let mut parts = std::mem::take(&mut self.groups[k]);
        while parts.len() > 1 {
            let level = parts.iter().map(|&(_, l)| l).max().unwrap_or(0);
            parts = parts
                .chunks(self.combine_size)
                .map(|c| {
                    let ids = c.iter().map(|&(id, _)| id).collect();
                    (g.add(combine(), ids, Hints::new(depth, 0).level(level)), level + 1)
                })
                .collect();
        }
        parts.pop().expect("every tree has at least one leaf").0
    }
}
