//! The graph of chunk tasks, its depth-first order, initial placement and executor.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use crate::window::{Settings, Window};

/// A handle on a submitted chunk task's result (an `ObjectRef`, or a library's enum of
/// them): cloned to each consumer's submission, waited on to bound the tasks in flight.
pub trait Output: Clone {
    /// Blocks until the task that makes this result has finished (successfully or not:
    /// a failure surfaces where the result is read).
    fn wait(&self);
}

impl<T: 'static> Output for ares::ObjectRef<T> {
    fn wait(&self) {
        let _ = ares::wait(std::slice::from_ref(self), 1, None);
    }
}

struct Node<T, O> {
    /// The task; `None` once submitted, or for a node whose result existed already.
    task: Option<T>,
    /// A result that existed before the run (a cached or put chunk).
    ready: bool,
    inputs: Vec<usize>,
    /// Depth of the expression it belongs to, then its level inside that tiling.
    depth: u32,
    level: u32,
    /// Output bytes (estimated).
    size: u64,
    out: Option<O>,
    /// Consumers not yet submitted.
    uses: usize,
    /// A result the caller keeps.
    keep: bool,
}

/// The chunk tasks of one execution, `T` being a library's task description and `O` its
/// result handle. Node IDs are indices, in the order nodes were added; a node's inputs
/// are added before it.
pub struct Graph<T, O> {
    nodes: Vec<Node<T, O>>,
}

impl<T, O> Default for Graph<T, O> {
    fn default() -> Self {
        Graph { nodes: Vec::new() }
    }
}

impl<T, O> Graph<T, O> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a task reading the results of `inputs`, with its scheduling hints: the depth
    /// of the expression it belongs to (deeper runs first), its level inside that
    /// expression's tiling (higher first: a combine before new leaves), and its output
    /// size in bytes (smaller first). Returns its ID.
    pub fn add(&mut self, task: T, inputs: Vec<usize>, depth: u32, level: u32, size: u64) -> usize {
        debug_assert!(inputs.iter().all(|&i| i < self.nodes.len()), "inputs are added first");
        self.nodes.push(Node {
            task: Some(task),
            ready: false,
            inputs,
            depth,
            level,
            size,
            out: None,
            uses: 0,
            keep: false,
        });
        self.nodes.len() - 1
    }

    /// Adds a result that exists already (computed earlier, or put by the caller).
    pub fn ready(&mut self, out: O) -> usize {
        let nodes = &mut self.nodes;
        nodes.push(Node {
            task: None,
            ready: true,
            inputs: Vec::new(),
            depth: 0,
            level: 0,
            size: 0,
            out: Some(out),
            uses: 0,
            keep: false,
        });
        nodes.len() - 1
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`'s task, until it is submitted (`None` for a ready result).
    pub fn task(&self, i: usize) -> Option<&T> {
        self.nodes[i].task.as_ref()
    }

    /// Node `i`'s inputs.
    pub fn inputs(&self, i: usize) -> &[usize] {
        &self.nodes[i].inputs
    }

    /// Depth-first order of the tasks (ready results excluded): among the tasks whose
    /// inputs all come earlier, the one of the deepest expression goes first, then the
    /// higher level, then the smaller output, then the one added first.
    pub fn order(&self) -> Vec<usize> {
        let n = self.nodes.len();
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut waiting: Vec<usize> = self.nodes.iter().map(|o| o.inputs.len()).collect();
        for (i, node) in self.nodes.iter().enumerate() {
            for &inp in &node.inputs {
                consumers[inp].push(i);
            }
        }
        type Key = (u32, u32, Reverse<u64>, Reverse<usize>);
        let key = |i: usize| -> Key {
            let o = &self.nodes[i];
            (o.depth, o.level, Reverse(o.size), Reverse(i))
        };
        let mut heap: BinaryHeap<Key> = BinaryHeap::new();
        let mut done: VecDeque<usize> = VecDeque::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if node.ready {
                done.push_back(i);
            } else if node.inputs.is_empty() {
                heap.push(key(i));
            }
        }
        let mut order = Vec::with_capacity(n);
        loop {
            while let Some(i) = done.pop_front() {
                for &c in &consumers[i] {
                    waiting[c] -= 1;
                    if waiting[c] == 0 {
                        heap.push(key(c));
                    }
                }
            }
            let Some((_, _, _, Reverse(i))) = heap.pop() else { break };
            order.push(i);
            done.push_back(i);
        }
        order
    }

    /// Initial placement by locality, after Mars: the initial tasks (no inputs) that
    /// feed one consumer go to one node, and successive such groups rotate over `nodes`
    /// in `order`, so the depth-first window keeps every node busy while each consumer
    /// still reads from a single node. On one node nothing is placed.
    pub fn assign_initial<N: Copy>(&self, order: &[usize], nodes: &[N]) -> HashMap<usize, N> {
        // On one node a placement says nothing, and one queue for every chunk task
        // keeps its workers busiest.
        if nodes.len() < 2 {
            return HashMap::new();
        }
        let mut first_consumer: HashMap<usize, usize> = HashMap::new();
        for &c in order {
            for &inp in &self.nodes[c].inputs {
                first_consumer.entry(inp).or_insert(c);
            }
        }
        let mut next = 0usize;
        let mut rotate = || {
            let n = nodes[next % nodes.len()];
            next += 1;
            n
        };
        let mut group: HashMap<usize, N> = HashMap::new();
        let mut placed = HashMap::new();
        for &i in order.iter().filter(|&&i| self.nodes[i].inputs.is_empty()) {
            let node = match first_consumer.get(&i) {
                Some(c) => *group.entry(*c).or_insert_with(&mut rotate),
                None => rotate(),
            };
            placed.insert(i, node);
        }
        placed
    }
}

impl<T, O: Output> Graph<T, O> {
    /// Submits every task in [`Graph::order`] through `submit(task, input results,
    /// options)` with at most `settings.max_in_flight` unfinished, and returns the
    /// results of `targets`. An intermediate result is dropped as soon as its last
    /// consumer is submitted (that task holds it now). Initial tasks are spread over the
    /// cluster's live nodes as a soft preference; their consumers follow the data.
    /// Once `settings.cancel` is set, nothing more is submitted: the tasks in flight are
    /// waited for and `cancelled()` is returned.
    pub fn run<E: From<ares::Error>>(
        &mut self,
        targets: &[usize],
        settings: &Settings,
        cancelled: impl Fn() -> E,
        mut submit: impl FnMut(T, Vec<O>, ares::TaskOptions) -> O,
    ) -> Result<Vec<O>, E> {
        for &t in targets {
            self.nodes[t].keep = true;
        }
        for i in 0..self.nodes.len() {
            for k in 0..self.nodes[i].inputs.len() {
                let inp = self.nodes[i].inputs[k];
                self.nodes[inp].uses += 1;
            }
        }
        let order = self.order();
        let here = ares::node_id()?;
        let mut nodes: Vec<ares::NodeId> = ares::nodes()?
            .into_iter()
            .filter(|n| n.node_id == here || (n.alive && n.addr.is_some()))
            .map(|n| n.node_id)
            .collect();
        nodes.sort();
        let placement = self.assign_initial(&order, &nodes);
        let mut window = Window::new(settings.max_in_flight, order.len(), settings.progress.clone());
        for i in order {
            if settings.cancelled() {
                window.drain();
                return Err(cancelled());
            }
            let opts = placement.get(&i).map(|&node| ares::TaskOptions::new().node_affinity(node, true));
            let task = self.nodes[i].task.take().expect("each task is submitted once");
            let ins: Vec<O> = self.nodes[i]
                .inputs
                .iter()
                .map(|&k| self.nodes[k].out.clone().expect("inputs are submitted first"))
                .collect();
            let out = submit(task, ins, opts.unwrap_or_default());
            window.admit(&out);
            self.nodes[i].out = Some(out);
            // The consumer's task now holds its inputs: drop ours when no one else needs them.
            for k in 0..self.nodes[i].inputs.len() {
                let inp = self.nodes[i].inputs[k];
                let node = &mut self.nodes[inp];
                node.uses -= 1;
                if node.uses == 0 && !node.keep {
                    node.out = None;
                }
            }
        }
        // Callers wait for the results anyway; finishing here makes progress reach 100%.
        if settings.progress.is_some() {
            window.drain();
        }
        Ok(targets.iter().map(|&t| self.nodes[t].out.clone().expect("every target is submitted")).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Trees;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum K {
        Leaf,
        Combine,
        Finish,
    }

    /// Four outputs, each folding four leaves through combine trees of 4.
    fn folds() -> (Graph<K, ()>, Vec<usize>) {
        let mut g: Graph<K, ()> = Graph::new();
        let mut trees = Trees::new(4, 4);
        for leaf in 0..16 {
            let id = g.add(K::Leaf, Vec::new(), 1, 0, 0);
            trees.push(&mut g, leaf / 4, id, 1, || K::Combine);
        }
        let roots: Vec<usize> = (0..4)
            .map(|k| {
                let r = trees.root(&mut g, k, 1, || K::Combine);
                g.add(K::Finish, vec![r], 1, u32::MAX, 0)
            })
            .collect();
        (g, roots)
    }

    #[test]
    fn depth_first_order_folds_each_group_before_starting_the_next() {
        let (g, _) = folds();
        let order = g.order();
        assert_eq!(order.len(), g.len(), "every task is scheduled once");
        let kinds: String = order
            .iter()
            .map(|&i| match g.task(i) {
                Some(K::Leaf) => 'l',
                Some(K::Combine) => 'c',
                Some(K::Finish) => 'f',
                None => '?',
            })
            .collect();
        assert_eq!(kinds, "llllcf".repeat(4));
        let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        for &i in &order {
            assert!(g.inputs(i).iter().all(|inp| pos[inp] < pos[&i]), "inputs come first");
        }
    }

    #[test]
    fn ready_results_are_not_scheduled_and_free_their_consumers() {
        let mut g: Graph<K, ()> = Graph::new();
        let r = g.ready(());
        let a = g.add(K::Leaf, vec![r], 1, 0, 0);
        let b = g.add(K::Leaf, Vec::new(), 1, 0, 0);
        let c = g.add(K::Combine, vec![a, b, r], 2, 0, 0);
        assert_eq!(g.order(), vec![a, b, c]);
        assert!(g.task(r).is_none());
    }

    #[test]
    fn deeper_then_higher_level_then_smaller_first() {
        let mut g: Graph<K, ()> = Graph::new();
        let big = g.add(K::Leaf, Vec::new(), 1, 0, 100);
        let small = g.add(K::Leaf, Vec::new(), 1, 0, 10);
        let high = g.add(K::Leaf, Vec::new(), 1, 3, 100);
        let deep = g.add(K::Leaf, Vec::new(), 2, 0, 1000);
        assert_eq!(g.order(), vec![deep, high, small, big]);
    }

    #[test]
    fn initial_tasks_feeding_one_consumer_share_a_node() {
        let (g, _) = folds();
        let order = g.order();
        let placed = g.assign_initial(&order, &[10u8, 20, 30]);
        assert_eq!(placed.len(), 16, "every leaf is placed");
        for i in (0..g.len()).filter(|&i| g.task(i) == Some(&K::Combine)) {
            let homes: std::collections::HashSet<u8> = g.inputs(i).iter().map(|x| placed[x]).collect();
            assert_eq!(homes.len(), 1, "a combine reads from {} nodes", homes.len());
        }
        // Groups rotate over the nodes.
        let mut per = HashMap::new();
        for n in placed.values() {
            *per.entry(*n).or_insert(0) += 1;
        }
        assert_eq!(per.values().copied().max(), Some(8), "{per:?}");
        assert!(g.assign_initial(&order, &[1u8]).is_empty(), "one node places nothing");
    }
}
