//! The chunk graph of one run: tasks, their inputs and scheduling hints, the depth-first
//! order in which they become submittable, and when a result may be dropped.
//!
//! Nodes are added while the graph runs (tiling resumes after a step whose shape
//! depends on data), so the order is kept as a heap of the tasks whose inputs are all
//! submitted. A node's result is dropped once no consumer still to be submitted reads
//! it, tiling holds no reference to it, and the caller does not keep it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::task::Obj;

/// Scheduling hints of a chunk task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hints {
    /// Depth of the tileable it belongs to (longest path from a source): deeper first.
    pub depth: u32,
    /// Its level inside that tileable's tiling (a combine above its leaves): higher first.
    pub level: u32,
    /// Its output's size in bytes: smaller first; also what it takes of the object store.
    pub bytes: u64,
    /// Whether `bytes` is exact (a tensor chunk's) rather than an estimate (a frame
    /// chunk's): only exact sizes can prove a task too large for the store.
    pub exact: bool,
    /// Objects its output is split into (a shuffle's map side: one per partition); a
    /// consumer reads one of them.
    pub parts: u32,
    /// Of each input split into parts, the ones it reads: `first`, `first + step`, …
    /// (a shuffle's reducer reads its own partition of every map output). `None`: all
    /// of them. A part is dropped as soon as its last reader is submitted, so its object
    /// is freed when that reader finishes, not with the whole map output.
    pub reads: Option<(u32, u32)>,
}

impl Default for Hints {
    fn default() -> Self {
        Hints { depth: 0, level: 0, bytes: 0, exact: false, parts: 1, reads: None }
    }
}

impl Hints {
    /// Hints at `depth`, level 0, of about `bytes`.
    pub fn new(depth: u32, bytes: u64) -> Self {
        Hints { depth, bytes, ..Hints::default() }
    }

    /// These hints at `level`.
    pub fn level(self, level: u32) -> Self {
        Hints { level, ..self }
    }

    /// These hints, the size being exact.
    pub fn exact(self) -> Self {
        Hints { exact: true, ..self }
    }

    /// These hints, the output split into `parts` objects.
    pub fn parts(self, parts: u32) -> Self {
        Hints { parts: parts.max(1), ..self }
    }

    /// These hints, reading only parts `first`, `first + step`, … of each input that
    /// is split into parts.
    pub fn reads(self, first: u32, step: u32) -> Self {
        Hints { reads: Some((first, step.max(1))), ..self }
    }
}

/// The parts of an input of `parts` parts that a consumer with `reads` reads; `None`
/// for all of them (or an input of one object).
fn parts_read(reads: Option<(u32, u32)>, parts: u32) -> Option<impl Iterator<Item = usize>> {
    let (first, step) = reads.filter(|_| parts > 1)?;
    Some((first as usize..parts as usize).step_by(step as usize))
}

/// A part's reader count once the part is dropped.
const DROPPED: u32 = u32::MAX;

type Key = (u32, u32, Reverse<u64>, Reverse<usize>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Added with [`Graph::add_lazy`] and not read yet: submitted only once something
    /// reads it.
    Deferred,
    /// Some inputs are not submitted yet.
    Waiting,
    /// Submittable, in the heap.
    Queued,
    /// Submitted (or a result that existed before the run).
    Submitted,
}

struct Node<T> {
    /// The task, until it is submitted; `None` for a result that existed before.
    task: Option<T>,
    inputs: Vec<usize>,
    consumers: Vec<usize>,
    hints: Hints,
    state: State,
    /// Inputs not submitted yet.
    missing: usize,
    out: Option<Obj>,
    /// Whether `out` was dropped (reading it again is a tiling bug).
    dropped: bool,
    /// Consumers not yet submitted.
    uses: usize,
    /// Of a result in parts: per part, consumers reading only some parts that read it
    /// and are not submitted yet ([`DROPPED`] once the part is let go); empty until
    /// such a consumer is added.
    part_uses: Vec<u32>,
    /// Consumers reading every part, not submitted yet.
    whole_uses: usize,
    /// References tiling still holds.
    holds: u32,
    /// A result the caller keeps.
    keep: bool,
}

/// The chunk tasks of one run, `T` being the task type (`Box<dyn Task>` in a run, any
/// type in tests). Node IDs are indices in the order nodes were added; a node's inputs
/// are added before it.
pub struct Graph<T> {
    nodes: Vec<Node<T>>,
    heap: BinaryHeap<Key>,
    /// Nodes still [`State::Deferred`].
    deferred: usize,
}

impl<T> Default for Graph<T> {
    fn default() -> Self {
        Graph { nodes: Vec::new(), heap: BinaryHeap::new(), deferred: 0 }
    }
}

impl<T> Graph<T> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&self, i: usize) -> Key {
        let h = self.nodes[i].hints;
        (h.depth, h.level, Reverse(h.bytes), Reverse(i))
    }

    /// Adds a task reading the results of `inputs` (in that order), with its hints.
    /// Returns its ID.
    pub fn add(&mut self, task: T, inputs: Vec<usize>, hints: Hints) -> usize {
        self.add_node(task, inputs, hints, false)
    }

    /// Adds a task as [`Graph::add`] does, to be submitted only once something reads its
    /// result: a consumer added with it as an input, tiling waiting for it
    /// ([`Graph::demand`]). A file's read that its consumers may do themselves (fused
    /// into their tasks) is never submitted when they all do.
    pub fn add_lazy(&mut self, task: T, inputs: Vec<usize>, hints: Hints) -> usize {
        self.add_node(task, inputs, hints, true)
    }

    fn add_node(&mut self, task: T, inputs: Vec<usize>, hints: Hints, lazy: bool) -> usize {
        let id = self.nodes.len();
        let mut missing = 0;
        for &i in &inputs {
            if !lazy {
                self.demand(i);
            }
            let n = &mut self.nodes[i];
            assert!(!n.dropped, "node {i} is read by node {id} after its result was dropped (a tiling bug)");
            n.consumers.push(id);
            n.uses += 1;
            match parts_read(hints.reads, n.hints.parts) {
                Some(ps) => {
                    if n.part_uses.is_empty() {
                        n.part_uses = vec![0; n.hints.parts as usize];
                    }
                    for p in ps {
                        let u = &mut n.part_uses[p];
                        assert!(*u != DROPPED, "part {p} of node {i} is read by node {id} after it was dropped");
                        *u += 1;
                    }
                }
                None => n.whole_uses += 1,
            }
            missing += usize::from(n.state != State::Submitted);
        }
        let state = match missing {
            _ if lazy => State::Deferred,
            0 => State::Queued,
            _ => State::Waiting,
        };
        self.deferred += usize::from(lazy);
        self.nodes.push(Node {
            task: Some(task),
            inputs,
            consumers: Vec::new(),
            hints,
            state,
            missing,
            out: None,
            dropped: false,
            uses: 0,
            part_uses: Vec::new(),
            whole_uses: 0,
            holds: 0,
            keep: false,
        });
        if state == State::Queued {
            let k = self.key(id);
            self.heap.push(k);
        }
        id
    }

    /// Node `i`'s result is read: a node added with [`Graph::add_lazy`] (and its lazy
    /// inputs) will be submitted.
    pub fn demand(&mut self, i: usize) {
        if self.nodes[i].state != State::Deferred {
            return;
        }
        self.deferred -= 1;
        for k in 0..self.nodes[i].inputs.len() {
            let inp = self.nodes[i].inputs[k];
            self.demand(inp);
        }
        let n = &mut self.nodes[i];
        if n.missing == 0 {
            n.state = State::Queued;
            let k = self.key(i);
            self.heap.push(k);
        } else {
            n.state = State::Waiting;
        }
    }

    /// Tasks added lazily that nothing has read yet.
    pub fn deferred(&self) -> usize {
        self.deferred
    }

    /// Adds a result that exists already (computed earlier, or put by the caller), of
    /// about `bytes`.
    pub fn ready(&mut self, out: Obj, bytes: u64) -> usize {
        self.nodes.push(Node {
            task: None,
            inputs: Vec::new(),
            consumers: Vec::new(),
            hints: Hints { bytes, ..Hints::default() },
            state: State::Submitted,
            missing: 0,
            out: Some(out),
            dropped: false,
            uses: 0,
            part_uses: Vec::new(),
            whole_uses: 0,
            holds: 0,
            keep: false,
        });
        self.nodes.len() - 1
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

    /// Node `i`'s task, mutable, until it is submitted: a library may fold more work
    /// into a task not yet submitted (a filter into the task reading a file).
    pub fn task_mut(&mut self, i: usize) -> Option<&mut T> {
        self.nodes[i].task.as_mut()
    }

    /// Node `i`'s inputs.
    pub fn inputs(&self, i: usize) -> &[usize] {
        &self.nodes[i].inputs
    }

    /// Node `i`'s consumers so far.
    pub fn consumers(&self, i: usize) -> &[usize] {
        &self.nodes[i].consumers
    }

    /// Node `i`'s hints.
    pub fn hints(&self, i: usize) -> Hints {
        self.nodes[i].hints
    }

    /// Whether node `i` is submitted (or was a ready result).
    pub fn submitted(&self, i: usize) -> bool {
        self.nodes[i].state == State::Submitted
    }

    /// Node `i`'s result, once submitted and while it is not dropped.
    pub fn out(&self, i: usize) -> Option<&Obj> {
        self.nodes[i].out.as_ref()
    }

    /// Tiling keeps a reference to node `i`: its result is not dropped until released.
    pub fn hold(&mut self, i: usize) {
        self.nodes[i].holds += 1;
    }

    /// Releases a reference taken with [`Graph::hold`].
    pub fn release(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        n.holds = n.holds.checked_sub(1).expect("a release matches a hold");
        self.maybe_drop(i);
    }

    /// The caller keeps node `i`'s result after the run.
    pub fn keep(&mut self, i: usize) {
        self.nodes[i].keep = true;
    }

    fn maybe_drop(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        if n.state == State::Submitted && n.uses == 0 && n.holds == 0 && !n.keep && n.out.is_some() {
            n.out = None;
            n.dropped = true;
        }
    }

    /// The best submittable task (deepest tileable, then higher level, then smaller
    /// output, then the one added first), without taking it.
    pub fn peek(&self) -> Option<usize> {
        self.heap.peek().map(|&(_, _, _, Reverse(i))| i)
    }

    /// Takes node `i` (the one [`Graph::peek`] gave) for submission: its task and its
    /// inputs' results.
    pub fn take(&mut self, i: usize) -> (T, Vec<Obj>) {
        assert_eq!(self.peek(), Some(i), "nodes are taken in heap order");
        self.heap.pop();
        let task = self.nodes[i].task.take().expect("a queued node has its task");
        let ins = self.nodes[i]
            .inputs
            .iter()
            .map(|&k| self.nodes[k].out.clone().expect("an input's result lives until its consumers are submitted"))
            .collect();
        (task, ins)
    }

    /// Records node `i`'s result: its consumers may become submittable, and inputs
    /// nobody needs any more are dropped (the submitted task holds them now).
    pub fn submitted_with(&mut self, i: usize, out: Obj) {
        self.nodes[i].out = Some(out);
        self.nodes[i].state = State::Submitted;
        for k in 0..self.nodes[i].consumers.len() {
            let c = self.nodes[i].consumers[k];
            let n = &mut self.nodes[c];
            n.missing -= 1;
            if n.missing == 0 && n.state == State::Waiting {
                n.state = State::Queued;
                let key = self.key(c);
                self.heap.push(key);
            }
        }
        let reads = self.nodes[i].hints.reads;
        for k in 0..self.nodes[i].inputs.len() {
            let inp = self.nodes[i].inputs[k];
            let n = &mut self.nodes[inp];
            n.uses -= 1;
            match parts_read(reads, n.hints.parts) {
                Some(ps) => {
                    for p in ps {
                        n.part_uses[p] -= 1;
                        if n.part_uses[p] == 0 {
                            Self::maybe_drop_part(n, p);
                        }
                    }
                }
                None => {
                    n.whole_uses -= 1;
                    if n.whole_uses == 0 {
                        for p in 0..n.part_uses.len() {
                            if n.part_uses[p] == 0 {
                                Self::maybe_drop_part(n, p);
                            }
                        }
                    }
                }
            }
            self.maybe_drop(inp);
        }
        self.maybe_drop(i);
    }

    /// Lets go of part `p` of a node's result when nothing may read it any more: its
    /// own readers are submitted (the caller checked), no consumer reads every part,
    /// tiling holds none of it, and the caller does not keep it.
    fn maybe_drop_part(n: &mut Node<T>, p: usize) {
        if n.whole_uses == 0 && n.holds == 0 && !n.keep && n.state == State::Submitted {
            if let Some(out) = &n.out {
                out.drop_part(p);
                n.part_uses[p] = DROPPED;
            }
        }
    }

    /// The order in which the tasks not submitted yet would be submitted if no node were
    /// added: the heap's order, each task's consumers joining as it goes.
    pub fn order(&self) -> Vec<usize> {
        let mut heap = self.heap.clone();
        let mut missing: HashMap<usize, usize> = HashMap::new();
        let mut order = Vec::new();
        while let Some((_, _, _, Reverse(i))) = heap.pop() {
            order.push(i);
            for &c in &self.nodes[i].consumers {
                let m = missing.entry(c).or_insert(self.nodes[c].missing);
                *m -= 1;
                if *m == 0 {
                    heap.push(self.key(c));
                }
            }
        }
        order
    }

    /// Initial placement by locality, after Mars: the initial tasks (no inputs) in
    /// `order` that feed one consumer go to one node, and successive such groups rotate
    /// over `nodes` starting at `*next`, so the depth-first window keeps every node busy
    /// while each consumer still reads from a single node. On one node nothing is placed.
    pub fn assign_initial<N: Copy>(&self, order: &[usize], nodes: &[N], next: &mut usize) -> HashMap<usize, N> {
        // On one node a placement says nothing, and one queue for every chunk task
        // keeps its workers busiest.
        if nodes.len() < 2 {
            return HashMap::new();
        }
        let mut rotate = || {
            let n = nodes[*next % nodes.len()];
            *next += 1;
            n
        };
        let mut group: HashMap<usize, N> = HashMap::new();
        let mut placed = HashMap::new();
        for &i in order.iter().filter(|&&i| self.nodes[i].inputs.is_empty()) {
            let node = match self.nodes[i].consumers.first() {
                Some(c) => *group.entry(*c).or_insert_with(&mut rotate),
                None => rotate(),
            };
            placed.insert(i, node);
        }
        placed
    }

    /// Nodes whose results the graph still holds, for tests.
    #[cfg(test)]
    pub(crate) fn live(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].out.is_some()).collect()
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
    fn folds() -> (Graph<K>, Vec<usize>) {
        let mut g: Graph<K> = Graph::new();
        let mut trees = Trees::new(4, 4);
        for leaf in 0..16 {
            let id = g.add(K::Leaf, Vec::new(), Hints::new(1, 0));
            trees.push(&mut g, leaf / 4, id, 1, || K::Combine);
        }
        let roots: Vec<usize> = (0..4)
            .map(|k| {
                let r = trees.root(&mut g, k, 1, || K::Combine);
                g.add(K::Finish, vec![r], Hints::new(1, 0).level(u32::MAX))
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
        let mut g: Graph<K> = Graph::new();
        let r = g.ready(fake_obj(), 0);
        let a = g.add(K::Leaf, vec![r], Hints::new(1, 0));
        let b = g.add(K::Leaf, Vec::new(), Hints::new(1, 0));
        let c = g.add(K::Combine, vec![a, b, r], Hints::new(2, 0));
        assert_eq!(g.order(), vec![a, b, c]);
        assert!(g.task(r).is_none());
    }

    #[test]
    fn deeper_then_higher_level_then_smaller_first() {
        let mut g: Graph<K> = Graph::new();
        let big = g.add(K::Leaf, Vec::new(), Hints::new(1, 100));
        let small = g.add(K::Leaf, Vec::new(), Hints::new(1, 10));
        let high = g.add(K::Leaf, Vec::new(), Hints::new(1, 100).level(3));
        let deep = g.add(K::Leaf, Vec::new(), Hints::new(2, 1000));
        assert_eq!(g.order(), vec![deep, high, small, big]);
    }

    #[test]
    fn initial_tasks_feeding_one_consumer_share_a_node() {
        let (g, _) = folds();
        let order = g.order();
        let placed = g.assign_initial(&order, &[10u8, 20, 30], &mut 0);
        assert_eq!(placed.len(), 16, "every leaf is placed");
        for i in (0..g.len()).filter(|&i| g.task(i) == Some(&K::Combine)) {
            let homes: std::collections::HashSet<u8> =
                g.inputs(i).iter().filter_map(|x| placed.get(x).copied()).collect();
            assert!(homes.len() <= 1, "a combine reads from {} nodes", homes.len());
        }
        // Groups rotate over the nodes.
        let mut per = HashMap::new();
        for n in placed.values() {
            *per.entry(*n).or_insert(0) += 1;
        }
        assert_eq!(per.values().copied().max(), Some(8), "{per:?}");
        assert!(g.assign_initial(&order, &[1u8], &mut 0).is_empty(), "one node places nothing");
    }

    #[test]
    fn a_lazy_task_is_submitted_only_once_something_reads_it() {
        let mut g: Graph<K> = Graph::new();
        let unread = g.add_lazy(K::Leaf, Vec::new(), Hints::new(1, 0));
        let read = g.add_lazy(K::Leaf, Vec::new(), Hints::new(1, 0));
        let waited = g.add_lazy(K::Leaf, Vec::new(), Hints::new(1, 0));
        // A consumer that reads the file itself stands in for `unread`.
        let fused = g.add(K::Combine, Vec::new(), Hints::new(2, 0));
        assert_eq!(g.deferred(), 3);
        let c = g.add(K::Combine, vec![read], Hints::new(2, 0));
        g.demand(waited);
        g.demand(waited);
        assert_eq!(g.deferred(), 1, "a consumer and a demand each read one");
        let order = g.order();
        assert!(!order.contains(&unread), "{order:?}");
        assert_eq!(order.len(), 4, "{order:?}");
        assert!(order.iter().position(|&i| i == read) < order.iter().position(|&i| i == c));
        assert!(order.contains(&fused) && order.contains(&waited));
        // A lazy consumer of a lazy input: both wait for a reader, then run in order.
        let inner = g.add_lazy(K::Leaf, Vec::new(), Hints::new(3, 0));
        let outer = g.add_lazy(K::Combine, vec![inner], Hints::new(3, 0));
        assert!(!g.order().contains(&inner));
        g.demand(outer);
        let order = g.order();
        assert!(order.iter().position(|&i| i == inner) < order.iter().position(|&i| i == outer), "{order:?}");
        assert_eq!(g.deferred(), 1);
    }

    /// A result handle that no runtime backs: only the graph's bookkeeping reads it.
    fn fake_obj() -> Obj {
        Obj::fake()
    }

    #[test]
    fn a_result_lives_until_its_last_consumer_is_submitted_and_tiling_lets_go() {
        let mut g: Graph<K> = Graph::new();
        let a = g.add(K::Leaf, Vec::new(), Hints::new(1, 0));
        let b = g.add(K::Combine, vec![a], Hints::new(2, 0));
        g.hold(a);
        g.hold(b);
        let (_, ins) = g.take(a);
        assert!(ins.is_empty());
        g.submitted_with(a, fake_obj());
        assert_eq!(g.peek(), Some(b), "its consumer is submittable once it is submitted");
        let (_, ins) = g.take(b);
        assert_eq!(ins.len(), 1);
        g.submitted_with(b, fake_obj());
        assert_eq!(g.live(), vec![a, b], "held by tiling");
        // A consumer added later still reads them.
        let c = g.add(K::Finish, vec![a, b], Hints::new(3, 0));
        g.release(a);
        g.release(b);
        assert_eq!(g.live(), vec![a, b]);
        g.keep(c);
        let (_, ins) = g.take(c);
        assert_eq!(ins.len(), 2);
        g.submitted_with(c, fake_obj());
        assert_eq!(g.live(), vec![c], "only the kept result is left");
    }

    #[test]
    fn a_part_is_dropped_once_its_own_readers_are_submitted() {
        let mut g: Graph<K> = Graph::new();
        // Two map tasks of 4 parts (values 0..2, then positions 2..4); reducer r reads
        // parts r and r + 2 of both.
        let maps: Vec<usize> = (0..2).map(|_| g.add(K::Leaf, Vec::new(), Hints::new(1, 0).parts(4))).collect();
        let reds: Vec<usize> =
            (0..2).map(|r| g.add(K::Combine, maps.clone(), Hints::new(1, 0).level(1).reads(r, 2))).collect();
        for &m in &maps {
            let _ = g.take(m);
            g.submitted_with(m, Obj::fake_parts(4));
        }
        let held = |g: &Graph<K>, m: usize| g.out(m).expect("not dropped yet").held_parts();
        assert_eq!(held(&g, maps[0]), vec![0, 1, 2, 3]);
        let first = g.peek().expect("a reducer is submittable");
        let r = reds.iter().position(|&x| x == first).expect("a reducer");
        let _ = g.take(first);
        g.submitted_with(first, fake_obj());
        let others: Vec<usize> = (0..4).filter(|p| p % 2 != r).collect();
        for &m in &maps {
            assert_eq!(held(&g, m), others, "the parts reducer {r} read are let go; the others stay");
        }
        let second = g.peek().expect("the other reducer");
        let _ = g.take(second);
        g.submitted_with(second, fake_obj());
        assert!(maps.iter().all(|&m| g.out(m).is_none()), "the map outputs are dropped whole");
    }

    #[test]
    fn a_reader_of_every_part_keeps_them_all() {
        let mut g: Graph<K> = Graph::new();
        let m = g.add(K::Leaf, Vec::new(), Hints::new(1, 0).parts(2));
        let one = g.add(K::Combine, vec![m], Hints::new(1, 0).level(1).reads(0, 2));
        let all = g.add(K::Finish, vec![m], Hints::new(1, 0));
        let _ = g.take(m);
        g.submitted_with(m, Obj::fake_parts(2));
        // The reader of one part goes first (higher level).
        assert_eq!(g.peek(), Some(one));
        let _ = g.take(one);
        g.submitted_with(one, fake_obj());
        assert_eq!(g.out(m).expect("read by another").held_parts(), vec![0, 1], "a reader of all parts waits");
        let _ = g.take(all);
        g.submitted_with(all, fake_obj());
        assert!(g.out(m).is_none());
    }
}
