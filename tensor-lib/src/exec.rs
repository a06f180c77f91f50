//! The executor: the one module that submits chunk tasks (keep it that way: the runtime's
//! API may still change under it).
//!
//! A tensor is computed by *materializing* nodes that cannot be fused into their
//! consumers (reductions across chunks, arrays put from the driver) and, for every output
//! chunk of the requested tensor, building one fused [`Program`] whose inputs are the
//! `ObjectRef`s of materialized chunks. Reductions run as trees: each chunk task folds its
//! fused input into a [`Partial`], and partials are combined `combine_size` at a time as
//! they are submitted, so intermediate results die as soon as their combiner has run.
//! Chunk tasks in flight are bounded by `max_in_flight`, which bounds memory by
//! (tasks in flight × chunk size) whatever the tensor's total size.

use std::collections::VecDeque;
use std::sync::Arc;

use ares::ObjectRef;
use ndarray::{ArrayD, IxDyn};

use crate::data::{Chunk, DType, Elem, Scalar, numel};
use crate::kernel::{Node, Partial, Program, ReduceOp};
use crate::tensor::{Op, Result, Tensor, TensorError, grid_indices};

/// Input chunks one task takes at most.
pub const MAX_INPUTS: usize = 4;

/// Where tensors are computed, with the scheduling settings.
#[derive(Clone, Debug)]
pub struct Session {
    /// Chunk tasks submitted and not yet finished, at most.
    pub max_in_flight: usize,
    /// Partials combined by one task of a tree reduction (Mars uses 4).
    pub combine_size: usize,
}

impl Default for Session {
    fn default() -> Self {
        Session { max_in_flight: 8, combine_size: 4 }
    }
}

/// How a chunk task reduces its fused result.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ReduceSpec {
    /// The reduction.
    pub op: ReduceOp,
    /// Axes reduced within the chunk; empty means all.
    pub axes: Vec<u32>,
}

/// Chunk tasks allocate and free many large buffers: keep freed memory in the heap
/// instead of returning it to the kernel each time (page faults cost more than the work).
fn keep_heap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: mallopt only tunes the allocator; these parameters take any value.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 512 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        }
    });
}

fn run_map(p: Program, inputs: &[&Chunk]) -> Chunk {
    keep_heap();
    p.run(inputs).unwrap_or_else(|e| panic!("{e}"))
}

fn run_reduce(p: Program, r: ReduceSpec, inputs: &[&Chunk]) -> Partial {
    keep_heap();
    if r.axes.is_empty() {
        return p.run_reduce(r.op, inputs).unwrap_or_else(|e| panic!("{e}"));
    }
    let chunk = p.run(inputs).unwrap_or_else(|e| panic!("{e}"));
    reduce_axes(&chunk, r.op, &r.axes)
}

/// Reduces `chunk` over `axes`, keeping them as dimensions of 1.
fn reduce_axes(chunk: &Chunk, op: ReduceOp, axes: &[u32]) -> Partial {
    let nd = chunk.shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !axes.contains(&(*d as u32))).collect();
    let reduced: Vec<usize> = (0..nd).filter(|d| axes.contains(&(*d as u32))).collect();
    let perm: Vec<usize> = kept.iter().chain(&reduced).copied().collect();
    let shape: Vec<usize> = chunk.shape.iter().map(|&d| d as usize).collect();
    let idx = ArrayD::from_shape_vec(IxDyn(&shape), (0..numel(&chunk.shape)).collect::<Vec<usize>>())
        .expect("shape matches")
        .permuted_axes(IxDyn(&perm));
    let order: Vec<usize> = idx.iter().copied().collect();
    let group: usize = reduced.iter().map(|&d| shape[d]).product();
    let out_shape: Vec<u64> = (0..nd).map(|d| if reduced.contains(&d) { 1 } else { chunk.shape[d] }).collect();
    Partial::of_groups(op, chunk.data.gather(&order), group, out_shape)
}

#[ares::remote]
fn map0(p: Program) -> Chunk {
    run_map(p, &[])
}
#[ares::remote]
fn map1(p: Program, a: Chunk) -> Chunk {
    run_map(p, &[&a])
}
#[ares::remote]
fn map2(p: Program, a: Chunk, b: Chunk) -> Chunk {
    run_map(p, &[&a, &b])
}
#[ares::remote]
fn map3(p: Program, a: Chunk, b: Chunk, c: Chunk) -> Chunk {
    run_map(p, &[&a, &b, &c])
}
#[ares::remote]
fn map4(p: Program, a: Chunk, b: Chunk, c: Chunk, d: Chunk) -> Chunk {
    run_map(p, &[&a, &b, &c, &d])
}
#[ares::remote]
fn reduce0(p: Program, r: ReduceSpec) -> Partial {
    run_reduce(p, r, &[])
}
#[ares::remote]
fn reduce1(p: Program, r: ReduceSpec, a: Chunk) -> Partial {
    run_reduce(p, r, &[&a])
}
#[ares::remote]
fn reduce2(p: Program, r: ReduceSpec, a: Chunk, b: Chunk) -> Partial {
    run_reduce(p, r, &[&a, &b])
}
#[ares::remote]
fn reduce3(p: Program, r: ReduceSpec, a: Chunk, b: Chunk, c: Chunk) -> Partial {
    run_reduce(p, r, &[&a, &b, &c])
}
#[ares::remote]
fn reduce4(p: Program, r: ReduceSpec, a: Chunk, b: Chunk, c: Chunk, d: Chunk) -> Partial {
    run_reduce(p, r, &[&a, &b, &c, &d])
}

/// `a · b` of two 2-d chunks, each optionally transposed (`flags` bit 0: `a`, bit 1: `b`).
#[ares::remote]
fn gemm(a: Chunk, b: Chunk, flags: u8) -> Chunk {
    keep_heap();
    crate::linalg::gemm(None, a, b, flags)
}

/// `acc + a · b`.
#[ares::remote]
fn gemm_acc(acc: Chunk, a: Chunk, b: Chunk, flags: u8) -> Chunk {
    keep_heap();
    crate::linalg::gemm(Some(acc), a, b, flags)
}

/// Combines partials of one output chunk.
#[ares::remote]
fn combine(parts: Vec<Partial>) -> Partial {
    let mut it = parts.into_iter();
    let mut acc = it.next().expect("combine gets at least one partial");
    for p in it {
        acc.combine(&p);
    }
    acc
}

/// Turns a partial into the output chunk, of `shape`.
#[ares::remote]
fn finish(p: Partial, x_dtype: DType, shape: Vec<u64>) -> Chunk {
    let mut c = p.finish(x_dtype);
    c.shape = shape;
    c
}

fn submit_map(p: Program, inputs: &[ObjectRef<Chunk>]) -> ObjectRef<Chunk> {
    match inputs {
        [] => ares::remote(map0).call(p),
        [a] => ares::remote(map1).call(p, a),
        [a, b] => ares::remote(map2).call(p, a, b),
        [a, b, c] => ares::remote(map3).call(p, a, b, c),
        [a, b, c, d] => ares::remote(map4).call(p, a, b, c, d),
        _ => unreachable!("checked against MAX_INPUTS"),
    }
}

fn submit_reduce(p: Program, r: ReduceSpec, inputs: &[ObjectRef<Chunk>]) -> ObjectRef<Partial> {
    match inputs {
        [] => ares::remote(reduce0).call(p, r),
        [a] => ares::remote(reduce1).call(p, r, a),
        [a, b] => ares::remote(reduce2).call(p, r, a, b),
        [a, b, c] => ares::remote(reduce3).call(p, r, a, b, c),
        [a, b, c, d] => ares::remote(reduce4).call(p, r, a, b, c, d),
        _ => unreachable!("checked against MAX_INPUTS"),
    }
}

/// Builds the fused program of one chunk.
struct Builder<'s> {
    session: &'s Session,
    /// Chunks already emitted (a tensor used twice, as in `x * x`, is computed once).
    emitted: std::collections::HashMap<(usize, Vec<usize>), u32>,
    nodes: Vec<Node>,
    shapes: Vec<Vec<u64>>,
    dtypes: Vec<DType>,
    inputs: Vec<ObjectRef<Chunk>>,
}

fn chunk_shape(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[i]).collect()
}

fn chunk_offset(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[..i].iter().sum()).collect()
}

/// Whether a reduction is computed inside its consumer's chunk program: over the last
/// axis only, with that axis in one chunk.
fn fusable_reduce(axes: &[usize], x: &Tensor) -> bool {
    x.ndim() > 0 && axes == [x.ndim() - 1] && x.chunks()[x.ndim() - 1].len() == 1
}

impl<'s> Builder<'s> {
    fn new(session: &'s Session) -> Self {
        Builder {
            session,
            emitted: std::collections::HashMap::new(),
            nodes: Vec::new(),
            shapes: Vec::new(),
            dtypes: Vec::new(),
            inputs: Vec::new(),
        }
    }

    fn push(&mut self, node: Node, shape: Vec<u64>, dtype: DType) -> u32 {
        self.nodes.push(node);
        self.shapes.push(shape);
        self.dtypes.push(dtype);
        (self.nodes.len() - 1) as u32
    }

    fn input(&mut self, r: &ObjectRef<Chunk>, shape: Vec<u64>, dtype: DType) -> Result<u32> {
        let arg = match self.inputs.iter().position(|x| x.id() == r.id()) {
            Some(i) => i,
            None => {
                if self.inputs.len() == MAX_INPUTS {
                    return Err(TensorError::TooManyInputs { n: MAX_INPUTS + 1, max: MAX_INPUTS });
                }
                self.inputs.push(r.clone());
                self.inputs.len() - 1
            }
        };
        Ok(self.push(Node::Input { arg: arg as u32 }, shape, dtype))
    }

    /// Emits chunk `g` of `t` (once); returns its node.
    fn emit(&mut self, t: &Tensor, g: &[usize]) -> Result<u32> {
        let key = (Arc::as_ptr(&t.node) as usize, g.to_vec());
        if let Some(&n) = self.emitted.get(&key) {
            return Ok(n);
        }
        let n = self.emit_new(t, g)?;
        self.emitted.insert(key, n);
        Ok(n)
    }

    fn emit_new(&mut self, t: &Tensor, g: &[usize]) -> Result<u32> {
        let shape = chunk_shape(t, g);
        let dtype = t.dtype();
        Ok(match &t.node.op {
            Op::Full(s) => self.push(Node::Const(*s), shape, dtype),
            Op::Random { kind, seed } => {
                let node =
                    Node::Random { kind: *kind, seed: *seed, offset: chunk_offset(t, g), full: t.shape().to_vec() };
                self.push(node, shape, dtype)
            }
            Op::Arange { start, step } => {
                // A 1-d range, possibly seen with extra dimensions of 1.
                let off = chunk_offset(t, g);
                let d = t.shape().iter().position(|&n| n != 1).unwrap_or(0);
                let offset = off.get(d).copied().unwrap_or(0);
                self.push(Node::Arange { start: *start, step: *step, offset }, shape, dtype)
            }
            Op::FromChunks(_) => {
                let chunks = materialize(self.session, t)?;
                let r = chunks[flat_index(t, g)].clone();
                self.input(&r, shape, dtype)?
            }
            Op::Unary(op, x) => {
                let x = self.emit(x, g)?;
                self.push(Node::Unary { op: *op, x }, shape, dtype)
            }
            Op::Cast(x) => {
                let x = self.emit(x, g)?;
                self.push(Node::Cast { x }, shape, dtype)
            }
            Op::Binary(op, a, b) => {
                let a = self.emit_broadcast(a, t, g)?;
                let b = self.emit_broadcast(b, t, g)?;
                self.push(Node::Binary { op: *op, a, b }, shape, dtype)
            }
            Op::Where(c, a, b) => {
                let c = self.emit_broadcast(c, t, g)?;
                let a = self.emit_broadcast(a, t, g)?;
                let b = self.emit_broadcast(b, t, g)?;
                self.push(Node::Where { c, a, b }, shape, dtype)
            }
            Op::Reduce { op, axes, keepdims, x } if fusable_reduce(axes, x) => {
                let mut gx = g.to_vec();
                if *keepdims {
                    gx.pop();
                }
                gx.push(0);
                let x = self.emit(x, &gx)?;
                self.push(Node::ReduceLast { op: *op, x }, shape, dtype)
            }
            Op::Transpose(x) => {
                let x = self.emit(x, &[g[1], g[0]])?;
                self.push(Node::Transpose { x }, shape, dtype)
            }
            Op::Reduce { .. } | Op::MatMul(..) => {
                let chunks = materialize(self.session, t)?;
                let r = chunks[flat_index(t, g)].clone();
                self.input(&r, shape, dtype)?
            }
        })
    }

    /// Emits the chunk of `child` that chunk `g` of `parent` reads, broadcast to its shape.
    fn emit_broadcast(&mut self, child: &Tensor, parent: &Tensor, g: &[usize]) -> Result<u32> {
        let k = parent.ndim() - child.ndim();
        let gc: Vec<usize> = (0..child.ndim())
            .map(|d| if child.shape()[d] == 1 && parent.shape()[d + k] != 1 { 0 } else { g[d + k] })
            .collect();
        let node = self.emit(child, &gc)?;
        let want = chunk_shape(parent, g);
        let have = &self.shapes[node as usize];
        if numel(have) == numel(&want) {
            return Ok(node);
        }
        let dtype = child.dtype();
        Ok(self.push(Node::Broadcast { x: node }, want, dtype))
    }

    fn finish(self) -> (Program, Vec<ObjectRef<Chunk>>) {
        (Program { nodes: self.nodes, shapes: self.shapes, dtypes: self.dtypes }, self.inputs)
    }
}

fn flat_index(t: &Tensor, g: &[usize]) -> usize {
    let mut k = 0;
    for (d, &i) in g.iter().enumerate() {
        k = k * t.chunks()[d].len() + i;
    }
    k
}

/// Bounds the chunk tasks in flight: waits for the oldest once the window is full.
struct Window {
    max: usize,
    /// One waiter per task in flight, oldest first.
    waiters: VecDeque<Box<dyn FnOnce()>>,
}

impl Window {
    fn new(max: usize) -> Self {
        Window { max: max.max(1), waiters: VecDeque::new() }
    }

    fn admit<T: 'static>(&mut self, r: &ObjectRef<T>) {
        while self.waiters.len() >= self.max {
            if let Some(wait) = self.waiters.pop_front() {
                wait();
            }
        }
        let r = r.clone();
        self.waiters.push_back(Box::new(move || {
            let _ = ares::wait(std::slice::from_ref(&r), 1, None);
        }));
    }
}

/// Computes every chunk of `t` (cached on the tensor); returns their refs, row-major.
pub(crate) fn materialize(session: &Session, t: &Tensor) -> Result<Arc<Vec<ObjectRef<Chunk>>>> {
    if let Some(r) = t.node.result.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        return Ok(r.clone());
    }
    let refs = match &t.node.op {
        Op::FromChunks(chunks) => chunks.iter().map(ares::put_ref).collect::<ares::Result<Vec<_>>>()?,
        Op::Reduce { op, axes, keepdims, x } => reduce(session, t, *op, axes, *keepdims, x)?,
        Op::MatMul(a, b) => matmul(session, t, a, b)?,
        _ => {
            let mut window = Window::new(session.max_in_flight);
            let mut out = Vec::new();
            for g in grid_indices(t.chunks()) {
                let mut b = Builder::new(session);
                b.emit(t, &g)?;
                let (p, inputs) = b.finish();
                let r = submit_map(p, &inputs);
                window.admit(&r);
                out.push(r);
            }
            out
        }
    };
    let refs = Arc::new(refs);
    *t.node.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(refs.clone());
    Ok(refs)
}

fn reduce(
    session: &Session,
    t: &Tensor,
    op: ReduceOp,
    axes: &[usize],
    keepdims: bool,
    x: &Tensor,
) -> Result<Vec<ObjectRef<Chunk>>> {
    let all = axes.len() == x.ndim();
    let spec = ReduceSpec { op, axes: if all { Vec::new() } else { axes.iter().map(|&a| a as u32).collect() } };
    let out_grid = grid_indices(t.chunks());
    // Partials waiting to be combined, per output chunk.
    let mut groups: Vec<Vec<ObjectRef<Partial>>> = vec![Vec::new(); out_grid.len()];
    let mut window = Window::new(session.max_in_flight);
    let combine_size = session.combine_size.max(2);
    for gx in grid_indices(x.chunks()) {
        let mut b = Builder::new(session);
        b.emit(x, &gx)?;
        let (p, inputs) = b.finish();
        let r = submit_reduce(p, spec.clone(), &inputs);
        window.admit(&r);
        // The output chunk this input chunk folds into.
        let go: Vec<usize> =
            (0..x.ndim()).filter_map(|d| if axes.contains(&d) { keepdims.then_some(0) } else { Some(gx[d]) }).collect();
        let k = flat_index(t, &go);
        groups[k].push(r);
        if groups[k].len() == combine_size {
            let parts = std::mem::take(&mut groups[k]);
            groups[k].push(ares::remote(combine).call(parts));
        }
    }
    let mut out = Vec::with_capacity(out_grid.len());
    for (k, go) in out_grid.iter().enumerate() {
        let mut parts = std::mem::take(&mut groups[k]);
        while parts.len() > 1 {
            parts = parts.chunks(combine_size).map(|c| ares::remote(combine).call(c.to_vec())).collect();
        }
        let shape = chunk_shape(t, go);
        let part = parts.pop().expect("every output chunk has at least one input chunk");
        out.push(ares::remote(finish).call(part, x.dtype(), shape));
    }
    Ok(out)
}

/// A materialized tensor's chunks, row-major over its grid.
type Chunks = Arc<Vec<ObjectRef<Chunk>>>;

/// The chunks a matmul operand reads: its own, or (for a transpose) its operand's.
fn gemm_operand(session: &Session, t: &Tensor) -> Result<(Chunks, bool, Tensor)> {
    match &t.node.op {
        Op::Transpose(x) => Ok((materialize(session, x)?, true, x.clone())),
        _ => Ok((materialize(session, t)?, false, t.clone())),
    }
}

/// Blocked matrix product: each output chunk is a chain of `gemm_acc` tasks over the
/// shared dimension's chunks. `a · aᵀ` computes only the upper block triangle and
/// transposes it into the lower one (numpy uses `syrk` for this case too).
fn matmul(session: &Session, t: &Tensor, a: &Tensor, b: &Tensor) -> Result<Vec<ObjectRef<Chunk>>> {
    let (ra, ta, base_a) = gemm_operand(session, a)?;
    let (rb, tb, base_b) = gemm_operand(session, b)?;
    let at = |i: usize, k: usize| {
        if ta { ra[k * base_a.chunks()[1].len() + i].clone() } else { ra[i * base_a.chunks()[1].len() + k].clone() }
    };
    let bt = |k: usize, j: usize| {
        if tb { rb[j * base_b.chunks()[1].len() + k].clone() } else { rb[k * base_b.chunks()[1].len() + j].clone() }
    };
    let flags = u8::from(ta) | (u8::from(tb) << 1);
    let symmetric = !ta && tb && Arc::ptr_eq(&base_a.node, &base_b.node) && a.chunks()[0] == b.chunks()[1];
    let (m, n, kk) = (t.chunks()[0].len(), t.chunks()[1].len(), a.chunks()[1].len());
    let mut window = Window::new(session.max_in_flight);
    let mut out: Vec<Option<ObjectRef<Chunk>>> = vec![None; m * n];
    for i in 0..m {
        for j in 0..n {
            if symmetric && i > j {
                continue;
            }
            // A diagonal block of a · aᵀ is symmetric: half the work (syrk's saving).
            let diag = if symmetric && i == j { crate::linalg::UPPER } else { 0 };
            let last = |k: usize| if diag != 0 && k + 1 == kk { crate::linalg::MIRROR } else { 0 };
            let mut acc = ares::remote(gemm).call(at(i, 0), bt(0, j), flags | diag | last(0));
            window.admit(&acc);
            for k in 1..kk {
                acc = ares::remote(gemm_acc).call(acc, at(i, k), bt(k, j), flags | diag | last(k));
                window.admit(&acc);
            }
            out[i * n + j] = Some(acc);
        }
    }
    if symmetric {
        for i in 0..m {
            for j in 0..i {
                let upper = out[j * n + i].clone().expect("computed above");
                let shape = chunk_shape(t, &[j, i]);
                let dtype = t.dtype();
                let p = Program {
                    nodes: vec![Node::Input { arg: 0 }, Node::Transpose { x: 0 }],
                    shapes: vec![shape.clone(), vec![shape[1], shape[0]]],
                    dtypes: vec![dtype, dtype],
                };
                let r = submit_map(p, &[upper]);
                window.admit(&r);
                out[i * n + j] = Some(r);
            }
        }
    }
    Ok(out.into_iter().map(|r| r.expect("every block is computed")).collect())
}

impl Session {
    /// A session with the default settings (8 chunk tasks in flight, combine 4 at a time).
    pub fn new() -> Self {
        Self::default()
    }

    /// Computes `t` and keeps its chunks (in the node's store) until `t` is dropped.
    pub fn execute(&self, t: &Tensor) -> Result<()> {
        materialize(self, t).map(|_| ())
    }

    /// Computes `t` and assembles it into one ndarray of `T`.
    pub fn fetch<T: Elem>(&self, t: &Tensor) -> Result<ArrayD<T>> {
        let refs = materialize(self, t)?;
        let shape: Vec<usize> = t.shape().iter().map(|&d| d as usize).collect();
        let mut out = ArrayD::<T>::from_elem(IxDyn(&shape), T::from_f64(0.0));
        for (g, r) in grid_indices(t.chunks()).iter().zip(refs.iter()) {
            let chunk = ares::get(r)?;
            let a = chunk.to_array::<T>();
            let mut view = out.view_mut();
            for (d, &i) in g.iter().enumerate() {
                let start: u64 = t.chunks()[d][..i].iter().sum();
                let len = t.chunks()[d][i];
                view.slice_axis_inplace(ndarray::Axis(d), ndarray::Slice::from(start as usize..(start + len) as usize));
            }
            let dim = view.raw_dim();
            view.assign(&a.into_shape_with_order(dim).expect("chunk shape matches its slot"));
        }
        Ok(out)
    }

    /// Computes a 0-d (or single-element) tensor and returns its value as a float64.
    pub fn scalar(&self, t: &Tensor) -> Result<f64> {
        let a = self.fetch::<f64>(t)?;
        Ok(a.iter().next().copied().unwrap_or(f64::NAN))
    }
}

/// A 0-d tensor holding `s` (useful in `where_`).
pub fn scalar(s: Scalar) -> Tensor {
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
}
