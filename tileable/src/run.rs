//! Running one expression: tiling it into one chunk graph and submitting that graph,
//! interleaved. A tiling step that needs data (a mask's lengths, a group-by's method, a
//! sort's bounds) registers the chunk tasks it waits for and returns
//! [`Tiling::Pending`]; the run submits everything submittable, waits for those tasks and
//! tiles again. Tiled tileables are memoized in the [`Cx`], so tiling resumes where it
//! stopped, in the same graph: scheduling, freeing and the store bound cover the whole
//! expression.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::graph::{Graph, Hints};
use crate::session::Session;
use crate::task::{Obj, Task};
use crate::window::{Footprint, Window};

/// What can stop a run, whatever the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The session's cancel flag was set.
    #[error("the computation was cancelled")]
    Cancelled,
    /// One chunk task's inputs and output together exceed the object store, so it could
    /// never run: found before anything of it is submitted.
    #[error(
        "object store full: the chunk task {task} needs {needs} bytes of the object store at once (its inputs and its output), more than the pool's {capacity} bytes; use smaller chunks or raise object_store_memory"
    )]
    StoreFull {
        /// The task.
        task: String,
        /// Bytes its inputs and output take together.
        needs: u64,
        /// The pool's capacity.
        capacity: u64,
    },
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] ares::Error),
}

/// The outcome of a tiling step that did not finish: it waits for chunk tasks (which
/// it registered with [`Cx::value`]), or it failed.
#[derive(Debug)]
pub enum Tiling<E> {
    /// Waiting for chunk tasks to finish; tile again once they have.
    Pending,
    /// Failed.
    Failed(E),
}

impl<E> From<E> for Tiling<E> {
    fn from(e: E) -> Self {
        Tiling::Failed(e)
    }
}

impl<E> Tiling<E> {
    /// The same outcome with the error converted.
    pub fn map_err<F>(self, f: impl FnOnce(E) -> F) -> Tiling<F> {
        match self {
            Tiling::Pending => Tiling::Pending,
            Tiling::Failed(e) => Tiling::Failed(f(e)),
        }
    }
}

/// A tiling step's result.
pub type TileResult<T, E> = Result<T, Tiling<E>>;

/// A node of a tileable graph (a tensor, a frame), as the engine sees it: an identity,
/// its operands, and whether a session has computed it already.
pub trait Node {
    /// Its identity (the address of its shared node).
    fn key(&self) -> usize;
    /// Calls `f` on each operand, once per use (an operand used twice is visited twice).
    /// Operands of a node computed in the session are not visited by the engine.
    fn for_each_operand(&self, f: &mut dyn FnMut(&dyn Node));
    /// Whether `session` computed it (its results are kept on it).
    fn computed(&self, session: &Session) -> bool;
    /// Whether its consumers may read through it into its operands (it is fused into
    /// them, as an element-wise step is), rather than only read its chunks.
    fn transparent(&self) -> bool {
        false
    }
}

struct Memo {
    value: Arc<dyn Any + Send + Sync>,
    nodes: Vec<usize>,
}

/// The tiling context of one run: the chunk graph being built, what is tiled so far,
/// and the chunk tasks tiling waits for.
pub struct Cx<'s> {
    session: &'s Session,
    graph: Graph<Box<dyn Task>>,
    memo: HashMap<(usize, u64), Memo>,
    /// Per tileable, consumers whose tiling has not finished (see [`Cx::consumed`]).
    consumers: HashMap<usize, usize>,
    /// Per tileable, its consumers under the root (counted once, by [`Cx::prepare`]).
    readers: HashMap<usize, usize>,
    operands: HashMap<usize, Vec<usize>>,
    depths: HashMap<usize, u32>,
    states: HashMap<(usize, u64), Box<dyn Any + Send>>,
    needs: Vec<usize>,
    tasks: usize,
    capacity: Option<u64>,
    /// The CPUs of the nodes a run places tasks on (1 when tiling alone).
    cpus: usize,
    /// The tileables keyed by address in this run, kept alive so that no address is
    /// reused for another node while the run's maps still name it.
    alive: Vec<Arc<dyn Any + Send + Sync>>,
}

impl<'s> Cx<'s> {
    /// An empty context for `session` (tiling alone needs no runtime).
    pub fn new(session: &'s Session) -> Self {
        Cx {
            session,
            graph: Graph::new(),
            memo: HashMap::new(),
            consumers: HashMap::new(),
            readers: HashMap::new(),
            operands: HashMap::new(),
            depths: HashMap::new(),
            states: HashMap::new(),
            needs: Vec::new(),
            tasks: 0,
            capacity: None,
            cpus: 1,
            alive: Vec::new(),
        }
    }

    /// The session being run.
    pub fn session(&self) -> &'s Session {
        self.session
    }

    /// The local object store's capacity, when running (tiling may size its tasks to
    /// it); `None` when tiling alone.
    pub fn store_capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// The CPUs of the nodes the run places tasks on (a shuffle needs at least this many
    /// partitions to keep them busy); 1 when tiling alone.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// The chunk graph.
    pub fn graph(&self) -> &Graph<Box<dyn Task>> {
        &self.graph
    }

    /// The chunk graph, to add to (combine trees).
    pub fn graph_mut(&mut self) -> &mut Graph<Box<dyn Task>> {
        &mut self.graph
    }

    /// Adds a chunk task reading `inputs`; returns its node.
    pub fn add(&mut self, task: impl Task, inputs: Vec<usize>, hints: Hints) -> usize {
        self.tasks += 1;
        self.graph.add(Box::new(task), inputs, hints)
    }

    /// Adds a chunk task to be submitted only once something reads its result (see
    /// [`Graph::add_lazy`]); returns its node.
    pub fn add_lazy(&mut self, task: impl Task, inputs: Vec<usize>, hints: Hints) -> usize {
        self.tasks += 1;
        self.graph.add_lazy(Box::new(task), inputs, hints)
    }

    /// How many consumers tileable `key` has under the root (each use counted; 0 for
    /// a tileable made while tiling): with one, a consumer may fuse its chunk tasks.
    pub fn readers(&self, key: usize) -> usize {
        self.readers.get(&key).copied().unwrap_or(0)
    }

    /// Adds a result that exists already, of about `bytes`; returns its node.
    pub fn ready(&mut self, out: Obj, bytes: u64) -> usize {
        self.graph.ready(out, bytes)
    }

    /// Counts, under `root`, how many consumers each tileable has, so that a tileable's
    /// chunks are let go once every consumer is tiled (not only once the whole
    /// expression is). Called once per run before tiling.
    pub fn prepare(&mut self, root: &dyn Node) {
        let mut seen = HashSet::new();
        self.count(root, &mut seen);
        self.readers = self.consumers.clone();
    }

    fn count(&mut self, n: &dyn Node, seen: &mut HashSet<usize>) {
        if !seen.insert(n.key()) || n.computed(self.session) {
            return;
        }
        let mut ops: Vec<usize> = Vec::new();
        n.for_each_operand(&mut |x| {
            ops.push(x.key());
            *self.consumers.entry(x.key()).or_insert(0) += 1;
            self.count(x, seen);
        });
        self.operands.insert(n.key(), ops);
    }

    /// Depth of `n` in the tileable graph: 0 for a source or a computed tileable, else
    /// one more than its deepest operand. Deeper chunk tasks run first.
    pub fn depth(&mut self, n: &dyn Node) -> u32 {
        if let Some(&d) = self.depths.get(&n.key()) {
            return d;
        }
        let d = if n.computed(self.session) {
            0
        } else {
            let mut d = 0;
            n.for_each_operand(&mut |x| d = d.max(self.depth(x) + 1));
            d
        };
        self.depths.insert(n.key(), d);
        d
    }

    /// What tiling recorded for `(key, variant)` (a library's list of chunk nodes).
    pub fn memo<V: Any + Send + Sync>(&self, key: usize, variant: u64) -> Option<Arc<V>> {
        self.memo.get(&(key, variant)).and_then(|m| m.value.clone().downcast::<V>().ok())
    }

    /// Keeps `node` (a tileable's shared node, whose address is its key) alive until the
    /// run ends: a node made during tiling (a rechunked operand, a rebuilt one) could
    /// otherwise be freed and its address given to another, which the memo would then
    /// mistake for it.
    pub fn retain(&mut self, node: Arc<dyn Any + Send + Sync>) {
        self.alive.push(node);
    }

    /// Forgets what tiling recorded for `(key, variant)`, letting go of its chunk nodes
    /// (their other holders keep them).
    pub fn forget(&mut self, key: usize, variant: u64) {
        if let Some(m) = self.memo.remove(&(key, variant)) {
            m.nodes.iter().for_each(|&i| self.graph.release(i));
        }
    }

    /// Records the tiling of `(key, variant)`: its value, and the chunk nodes it refers
    /// to, which stay alive until every consumer of `key` is tiled.
    pub fn set_memo<V: Any + Send + Sync>(&mut self, key: usize, variant: u64, value: Arc<V>, nodes: &[usize]) {
        for &i in nodes {
            self.graph.hold(i);
        }
        if let Some(old) = self.memo.insert((key, variant), Memo { value, nodes: nodes.to_vec() }) {
            old.nodes.iter().for_each(|&i| self.graph.release(i));
        }
    }

    /// Tileable `n` is tiled (its chunks memoized). If its consumers read only its
    /// chunks, its operands have one consumer less to wait for; if they may read through
    /// it into its operands (it is [`Node::transparent`]: fused into them), that waits
    /// until every consumer of `n` is tiled.
    pub fn finished(&mut self, n: &dyn Node) {
        if !n.transparent() {
            self.release_edges(n.key());
        }
    }

    /// Every consumer of `key` has stopped reading it, or `key` reads its operands no
    /// more: one consumer less for each operand.
    fn release_edges(&mut self, key: usize) {
        for op in self.operands.remove(&key).unwrap_or_default() {
            self.consumed(op);
        }
    }

    /// One consumer of `key` will not read it again. Once none is left, the chunks `key`
    /// was tiled into are let go (submitted consumers still hold them), and nothing can
    /// read through it into its operands either.
    fn consumed(&mut self, key: usize) {
        let Some(c) = self.consumers.get_mut(&key) else { return };
        *c = c.saturating_sub(1);
        if *c > 0 {
            return;
        }
        self.consumers.remove(&key);
        // Forgotten, not only let go: a late reader the count did not see tiles it again
        // rather than read chunks that are gone.
        let variants: Vec<(usize, u64)> = self.memo.keys().filter(|k| k.0 == key).copied().collect();
        for k in variants {
            if let Some(m) = self.memo.remove(&k) {
                m.nodes.iter().for_each(|&i| self.graph.release(i));
            }
        }
        self.release_edges(key);
    }

    /// Per-operator state kept across tiling steps (a group-by's probe, say).
    pub fn take_state<S: Any + Send>(&mut self, key: usize, variant: u64) -> Option<S> {
        self.states.remove(&(key, variant)).and_then(|b| b.downcast::<S>().ok()).map(|b| *b)
    }

    /// Keeps `state` for the next tiling step.
    pub fn put_state<S: Any + Send>(&mut self, key: usize, variant: u64, state: S) {
        self.states.insert((key, variant), Box::new(state));
    }

    /// Node `i`'s result if its task has finished; otherwise registers that tiling
    /// waits for it and returns [`Tiling::Pending`]. The caller holds `i` meanwhile.
    pub fn value<E>(&mut self, i: usize) -> TileResult<Obj, E> {
        self.graph.demand(i);
        if let Some(out) = self.graph.out(i) {
            if out.is_ready() {
                return Ok(out.clone());
            }
        }
        self.needs.push(i);
        Err(Tiling::Pending)
    }

    /// Whether tiling waits for node `i` (registered with [`Cx::value`]).
    pub fn waits_for(&self, i: usize) -> bool {
        self.needs.contains(&i)
    }

    /// Lets go of every memoized chunk: tiling is over.
    fn release_all(&mut self) {
        for (_, m) in self.memo.drain() {
            for i in m.nodes {
                self.graph.release(i);
            }
        }
    }
}

/// The chunk tasks of a run being submitted: the window over tasks in flight, the
/// store's capacity, and where initial tasks go.
struct Submitter {
    window: Window,
    capacity: Option<u64>,
    cpus: usize,
    nodes: Vec<ares::NodeId>,
    next_node: usize,
}

impl Submitter {
    fn new(session: &Session) -> Result<Self, Error> {
        let settings = session.settings();
        let here = ares::node_id()?;
        let usable: Vec<_> =
            ares::nodes()?.into_iter().filter(|n| n.node_id == here || (n.alive && n.addr.is_some())).collect();
        let cpu_units: u64 = usable.iter().map(|n| n.total.get_units("CPU")).sum();
        let cpus = (cpu_units / ares_common::resources::UNITS).max(1) as usize;
        let mut nodes: Vec<ares::NodeId> = usable.into_iter().map(|n| n.node_id).collect();
        nodes.sort();
        let capacity = ares::node_stats().ok().map(|s| s.store_capacity).filter(|&c| c > 0);
        let limit = capacity.map(|c| (c as f64 * settings.store_share.clamp(0.05, 1.0)) as u64);
        Ok(Submitter {
            window: Window::new(settings.max_in_flight, limit, settings.progress.clone()),
            capacity,
            cpus,
            nodes,
            next_node: 0,
        })
    }

    /// Node `i`'s footprint: its output and each input (one part of a split output),
    /// with their sizes; and whether every size is exact.
    fn footprint(g: &Graph<Box<dyn Task>>, i: usize) -> (Footprint, bool) {
        let h = g.hints(i);
        let mut fp = vec![(i, h.bytes)];
        let mut exact = h.exact;
        for &k in g.inputs(i) {
            let hk = g.hints(k);
            fp.push((k, hk.bytes / u64::from(hk.parts.max(1))));
            exact &= hk.exact;
        }
        (fp, exact)
    }

    /// Submits every submittable task, depth-first, within the window.
    fn pump(&mut self, cx: &mut Cx<'_>) -> Result<(), Error> {
        let settings = cx.session.settings();
        let g = &mut cx.graph;
        self.window.total = cx.tasks - g.deferred();
        let placement = if self.nodes.len() > 1 {
            let order = g.order();
            g.assign_initial(&order, &self.nodes, &mut self.next_node)
        } else {
            HashMap::new()
        };
        while let Some(i) = g.peek() {
            if settings.cancelled() {
                return Err(Error::Cancelled);
            }
            let (fp, exact) = Self::footprint(g, i);
            while !self.window.fits(&fp) {
                self.window.wait_oldest();
            }
            // Only exact sizes prove that a task can never run.
            if self.window.is_empty() && exact {
                let needs = self.window.extra(&fp);
                if let Some(capacity) = self.capacity.filter(|&c| needs > c) {
                    let task = g.task(i).map_or_else(|| "?".into(), |t| t.name());
                    return Err(Error::StoreFull { task, needs, capacity });
                }
            }
            let opts = placement.get(&i).map(|&node| ares::TaskOptions::new().node_affinity(node, true));
            let (task, ins) = g.take(i);
            let out = task.submit(ins, opts.unwrap_or_default());
            self.window.admit(out.clone(), fp);
            g.submitted_with(i, out);
        }
        Ok(())
    }
}

/// Runs the expression under `root`: `tile` is called until it returns the chunk nodes
/// of the result (it may return [`Tiling::Pending`] after registering what it waits
/// for with [`Cx::value`]); meanwhile and then, the graph is submitted depth-first with
/// at most `max_in_flight` tasks unfinished and their inputs and outputs within the
/// store's share. Returns the targets' results (submitted; not necessarily finished).
/// On cancellation or failure, the tasks in flight are waited for and every
/// intermediate is freed.
pub fn run<E: From<Error>>(
    session: &Session,
    root: &dyn Node,
    mut tile: impl FnMut(&mut Cx<'_>) -> TileResult<Vec<usize>, E>,
) -> Result<Vec<Obj>, E> {
    let mut cx = Cx::new(session);
    cx.prepare(root);
    let mut sub = Submitter::new(session).map_err(E::from)?;
    cx.capacity = sub.capacity;
    cx.cpus = sub.cpus;
    let result = loop {
        if session.settings().cancelled() {
            break Err(E::from(Error::Cancelled));
        }
        match tile(&mut cx) {
            Ok(targets) => {
                for &t in &targets {
                    cx.graph.keep(t);
                    cx.graph.demand(t);
                }
                cx.release_all();
                if let Err(e) = sub.pump(&mut cx) {
                    break Err(E::from(e));
                }
                // Callers wait for the results anyway; finishing here makes progress
                // reach 100%.
                if session.settings().progress.is_some() {
                    sub.window.drain();
                }
                let outs = targets.iter().map(|&t| cx.graph.out(t).cloned().expect("a target is submitted")).collect();
                return Ok(outs);
            }
            Err(Tiling::Failed(e)) => break Err(e),
            Err(Tiling::Pending) => {
                let needs = std::mem::take(&mut cx.needs);
                assert!(!needs.is_empty(), "a tiling step is pending without waiting for any task");
                if let Err(e) = sub.pump(&mut cx) {
                    break Err(E::from(e));
                }
                for i in needs {
                    match cx.graph.out(i) {
                        Some(out) => out.wait(),
                        None => panic!("tiling waits for node {i}, which is not submitted or was dropped"),
                    }
                }
            }
        }
    };
    // Failed or cancelled: the tasks in flight finish, then the graph (and with it every
    // intermediate) goes.
    sub.window.drain();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tileable of the tests: an ID, its operands, whether consumers read through it.
    struct N {
        id: usize,
        ops: Vec<std::rc::Rc<N>>,
        transparent: bool,
    }

    impl Node for N {
        fn key(&self) -> usize {
            self.id
        }
        fn for_each_operand(&self, f: &mut dyn FnMut(&dyn Node)) {
            for x in &self.ops {
                f(x.as_ref());
            }
        }
        fn computed(&self, _: &Session) -> bool {
            false
        }
        fn transparent(&self) -> bool {
            self.transparent
        }
    }

    fn n(id: usize, ops: &[&std::rc::Rc<N>], transparent: bool) -> std::rc::Rc<N> {
        std::rc::Rc::new(N { id, ops: ops.iter().map(|&x| x.clone()).collect(), transparent })
    }

    struct T;
    impl Task for T {
        fn submit(self: Box<Self>, _: Vec<Obj>, _: ares::TaskOptions) -> Obj {
            unreachable!("never submitted")
        }
        fn name(&self) -> String {
            "t".into()
        }
    }

    /// Tiles `x` as one task reading its operands' memoized nodes.
    fn tile(cx: &mut Cx<'_>, x: &N) -> usize {
        if let Some(v) = cx.memo::<usize>(x.id, 0) {
            return *v;
        }
        let inputs: Vec<usize> = x.ops.iter().map(|o| tile(cx, o)).collect();
        let depth = cx.depth(x);
        let i = cx.add(T, inputs, Hints::new(depth, 0));
        cx.set_memo(x.id, 0, Arc::new(i), &[i]);
        cx.finished(x);
        i
    }

    #[test]
    fn a_tileable_is_let_go_once_every_consumer_is_tiled_and_not_before() {
        let s = Session::new();
        let a = n(1, &[], false);
        let b = n(2, &[&a], false);
        let d = n(3, &[&a], false);
        let root = n(4, &[&b, &d], false);
        let mut cx = Cx::new(&s);
        cx.prepare(root.as_ref());
        assert_eq!(cx.depth(root.as_ref()), 2);
        tile(&mut cx, &b);
        assert!(cx.memo::<usize>(1, 0).is_some(), "d still reads a");
        tile(&mut cx, &d);
        assert!(cx.memo::<usize>(1, 0).is_none(), "both consumers of a are tiled");
        assert!(cx.memo::<usize>(2, 0).is_some(), "the root still reads b");
        tile(&mut cx, &root);
        assert!(cx.memo::<usize>(2, 0).is_none() && cx.memo::<usize>(3, 0).is_none());
        assert_eq!(cx.graph().len(), 4, "every tileable tiled once");
    }

    #[test]
    fn what_consumers_read_through_is_kept_until_the_transparent_node_is_consumed() {
        let s = Session::new();
        let a = n(1, &[], false);
        // b is fused into its consumers: they may read a through it.
        let b = n(2, &[&a], true);
        let c = n(3, &[&b], false);
        let root = n(4, &[&b, &c], false);
        let mut cx = Cx::new(&s);
        cx.prepare(root.as_ref());
        tile(&mut cx, &b);
        assert!(cx.memo::<usize>(1, 0).is_some(), "b's consumers may still read a");
        tile(&mut cx, &c);
        assert!(cx.memo::<usize>(1, 0).is_some(), "the root may still read a through b");
        tile(&mut cx, &root);
        assert!(cx.memo::<usize>(1, 0).is_none() && cx.memo::<usize>(2, 0).is_none());
    }
}
