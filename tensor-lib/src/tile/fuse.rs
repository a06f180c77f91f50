//! Fusion: the one program ([`Program`]) that computes a chunk of an element-wise
//! expression, reading the chunks of the tensors tiled on their own as inputs.

use std::collections::{HashMap, HashSet};

use ares_tileable::Cx;

use super::{Src, Tiled, cached, chunk_offset, chunk_shape, flat_index, fusable_reduce, key, tile_all};
use crate::data::{DType, Scalar, numel};
use crate::kernel::{LinOp, Node, Program};
use crate::tensor::{Op, Tensor, TensorError, grid_indices, squeeze_chunks};

/// Tiles every tensor the programs of `roots`' chunks read as an input (whatever is not
/// fused into them), so that building those programs never stops half-way for a step
/// that waits.
pub(crate) fn prepare(cx: &mut Cx<'_>, roots: &[&Tensor]) -> Tiled<()> {
    let mut inputs = Vec::new();
    let mut seen = HashSet::new();
    for r in roots {
        collect(cx, r, &mut inputs, &mut seen);
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    tile_all(cx, &refs).map(|_| ())
}

/// The tensors under `t` that its fused program reads as inputs.
fn collect(cx: &Cx<'_>, t: &Tensor, out: &mut Vec<Tensor>, seen: &mut HashSet<usize>) {
    if !seen.insert(key(t)) {
        return;
    }
    if cached(cx, t).is_some() {
        return out.push(t.clone());
    }
    if let Some(r) = t.node.rebuilt.get() {
        return collect(cx, r, out, seen);
    }
    match &t.node.op {
        Op::Full(_) | Op::Random { .. } | Op::Arange { .. } => {}
        Op::Unary(..)
        | Op::Cast(_)
        | Op::Binary(..)
        | Op::Where(..)
        | Op::Transpose(_)
        | Op::Permute(..)
        | Op::Slice { .. }
        | Op::Rechunk(..)
        | Op::Concat(..)
        | Op::Reshape(..)
        | Op::Sort { .. }
        | Op::Fft { .. } => {
            for x in t.operands() {
                collect(cx, x, out, seen);
            }
        }
        Op::Reduce { axes, x, .. } if fusable_reduce(axes, x) => collect(cx, x, out, seen),
        _ => out.push(t.clone()),
    }
}

/// Builds the fused program of one chunk.
pub(crate) struct Builder<'p, 's> {
    cx: &'p mut Cx<'s>,
    /// Chunks already emitted (a tensor used twice, as in `x * x`, is computed once).
    emitted: HashMap<(usize, Vec<usize>), u32>,
    nodes: Vec<Node>,
    shapes: Vec<Vec<u64>>,
    dtypes: Vec<DType>,
    inputs: Vec<usize>,
}

impl<'p, 's> Builder<'p, 's> {
    pub(crate) fn new(cx: &'p mut Cx<'s>) -> Self {
        Builder {
            cx,
            emitted: HashMap::new(),
            nodes: Vec::new(),
            shapes: Vec::new(),
            dtypes: Vec::new(),
            inputs: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, node: Node, shape: Vec<u64>, dtype: DType) -> u32 {
        self.nodes.push(node);
        self.shapes.push(shape);
        self.dtypes.push(dtype);
        (self.nodes.len() - 1) as u32
    }

    /// Reads chunk `src` (of `shape` as the tensor sees it) as an input.
    pub(crate) fn input(&mut self, src: Src, shape: Vec<u64>, dtype: DType) -> u32 {
        let arg = match self.inputs.iter().position(|&x| x == src.op) {
            Some(i) => i,
            None => {
                self.inputs.push(src.op);
                self.inputs.len() - 1
            }
        };
        if !src.t {
            return self.push(Node::Input { arg: arg as u32 }, shape, dtype);
        }
        let stored = vec![shape[1], shape[0]];
        let x = self.push(Node::Input { arg: arg as u32 }, stored, dtype);
        self.push(Node::Transpose { x }, shape, dtype)
    }

    /// Emits chunk `g` of `t` (once); returns its node.
    pub(crate) fn emit(&mut self, t: &Tensor, g: &[usize]) -> Tiled<u32> {
        let k = (key(t), g.to_vec());
        if let Some(&n) = self.emitted.get(&k) {
            return Ok(n);
        }
        let n = self.emit_new(t, g)?;
        self.emitted.insert(k, n);
        Ok(n)
    }

    /// Chunk `g` of a tensor tiled on its own (not fused).
    fn tiled(&mut self, t: &Tensor, g: &[usize]) -> Tiled<u32> {
        let srcs = super::tile(self.cx, t)?;
        Ok(self.input(srcs[flat_index(t, g)], chunk_shape(t, g), t.dtype()))
    }

    fn emit_new(&mut self, t: &Tensor, g: &[usize]) -> Tiled<u32> {
        if cached(self.cx, t).is_some() {
            return self.tiled(t, g);
        }
        if let Some(r) = t.node.rebuilt.get() {
            return self.emit(&r.clone(), g);
        }
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
            Op::Permute(x, perm) => {
                let mut gx = vec![0; g.len()];
                for (d, &p) in perm.iter().enumerate() {
                    gx[p] = g[d];
                }
                let x = self.emit(x, &gx)?;
                let perm = perm.iter().map(|&p| p as u32).collect();
                self.push(Node::Permute { x, perm }, shape, dtype)
            }
            Op::Slice { x, start, step } => self.emit_slice(t, g, x, start, step)?,
            Op::Rechunk(x, _) => self.emit_rechunk(t, g, x)?,
            Op::Concat(xs, axis) => {
                // Chunk g[axis] of the result is some operand's chunk.
                let mut i = g[*axis];
                for x in xs {
                    let n = x.chunks()[*axis].len();
                    if i < n {
                        let mut gx = g.to_vec();
                        gx[*axis] = i;
                        return self.emit(x, &gx);
                    }
                    i -= n;
                }
                unreachable!("the grid covers the operands")
            }
            Op::Reshape(x, _) => self.emit_reshape(t, g, x)?,
            Op::Sort { x, axis, descending, arg } => {
                let x = self.emit(x, g)?;
                let node = Node::Sort { x, axis: *axis as u32, descending: *descending, arg: *arg };
                self.push(node, shape, dtype)
            }
            Op::Fft { x, axis, kind, scale } => {
                let x = self.emit(x, g)?;
                let node = Node::Fft { x, axis: *axis as u32, kind: *kind, scale: *scale };
                self.push(node, shape, dtype)
            }
            Op::FromChunks(_)
            | Op::Stored(_)
            | Op::Source(_)
            | Op::Reduce { .. }
            | Op::MatMul(..)
            | Op::Mask(..)
            | Op::Factor(..)
            | Op::Solve(..)
            | Op::Scan { .. }
            | Op::SampleSort { .. }
            | Op::Unique { .. }
            | Op::Search { .. }
            | Op::Take { .. } => self.tiled(t, g)?,
        })
    }

    /// Emits the chunk of `child` that chunk `g` of `parent` reads, broadcast to its shape.
    fn emit_broadcast(&mut self, child: &Tensor, parent: &Tensor, g: &[usize]) -> Tiled<u32> {
        let k = parent.ndim() - child.ndim();
        let gc: Vec<usize> = (0..child.ndim())
            // A dimension the child holds in one chunk reads that chunk (a length-1
            // dimension broadcast, or one split as `[1, 0]` after a mask ran).
            .map(|d| {
                if child.chunks()[d].len() == 1 || (child.shape()[d] == 1 && parent.shape()[d + k] != 1) {
                    0
                } else {
                    g[d + k]
                }
            })
            .collect();
        let node = self.emit(child, &gc)?;
        let want = chunk_shape(parent, g);
        let have = &self.shapes[node as usize];
        if numel(have) == numel(&want) {
            return Ok(node);
        }
        let dtype = child.dtype();
        // A broadcast constant stays a constant (kernels apply it as a scalar).
        if let Node::Const(c) = self.nodes[node as usize] {
            return Ok(self.push(Node::Const(c), want, dtype));
        }
        Ok(self.push(Node::Broadcast { x: node }, want, dtype))
    }

    /// A slice chunk reads one chunk of `x`: the one holding its first element.
    fn emit_slice(&mut self, t: &Tensor, g: &[usize], x: &Tensor, start: &[u64], step: &[i64]) -> Tiled<u32> {
        let shape = chunk_shape(t, g);
        let off = chunk_offset(t, g);
        let mut gx = Vec::with_capacity(g.len());
        let mut local = Vec::with_capacity(g.len());
        for d in 0..g.len() {
            let pos = (start[d] as i64 + off[d] as i64 * step[d]) as u64;
            let (i, lo) = locate(&x.chunks()[d], pos);
            gx.push(i);
            local.push(pos - lo);
        }
        if shape.contains(&0) {
            return Ok(self.push(Node::Const(Scalar::Bool(false)), shape, t.dtype()));
        }
        let xn = self.emit(x, &gx)?;
        if local.iter().all(|&l| l == 0) && step.iter().all(|&s| s == 1) && self.shapes[xn as usize] == shape {
            return Ok(xn);
        }
        Ok(self.push(Node::View { x: xn, start: local, step: step.to_vec() }, shape, t.dtype()))
    }

    /// A rechunked chunk is assembled from the boxes of `x`'s chunks it overlaps.
    fn emit_rechunk(&mut self, t: &Tensor, g: &[usize], x: &Tensor) -> Tiled<u32> {
        let shape = chunk_shape(t, g);
        let off = chunk_offset(t, g);
        // Per dimension: (chunk index, start inside it, length, offset in the output).
        let mut pieces: Vec<Vec<(usize, u64, u64, u64)>> = Vec::new();
        for d in 0..g.len() {
            let (lo, hi) = (off[d], off[d] + shape[d]);
            let mut v = Vec::new();
            let mut c0 = 0;
            for (i, &c) in x.chunks()[d].iter().enumerate() {
                let (a, b) = (lo.max(c0), hi.min(c0 + c));
                if a < b || (shape[d] == 0 && i == 0) {
                    v.push((i, a.saturating_sub(c0), b.saturating_sub(a), a.saturating_sub(lo)));
                }
                c0 += c;
            }
            pieces.push(v);
        }
        // A sort or an FFT computes whole lanes: fused here, each output chunk would
        // compute again every source chunk it takes a piece of. Those are read stored.
        let whole_lanes = matches!(x.node.op, Op::Sort { .. } | Op::Fft { .. });
        let mut parts = Vec::new();
        let mut offsets = Vec::new();
        for combo in grid_indices(&pieces.iter().map(|v| vec![0; v.len()]).collect::<Vec<_>>()) {
            let sel: Vec<(usize, u64, u64, u64)> = combo.iter().enumerate().map(|(d, &k)| pieces[d][k]).collect();
            let gx: Vec<usize> = sel.iter().map(|p| p.0).collect();
            let xn = if whole_lanes { self.tiled(x, &gx)? } else { self.emit(x, &gx)? };
            let part_shape: Vec<u64> = sel.iter().map(|p| p.2).collect();
            let part = if self.shapes[xn as usize] == part_shape {
                xn
            } else {
                let start = sel.iter().map(|p| p.1).collect();
                self.push(Node::View { x: xn, start, step: vec![1; g.len()] }, part_shape, x.dtype())
            };
            parts.push(part);
            offsets.push(sel.iter().map(|p| p.3).collect());
        }
        if parts.len() == 1 {
            return Ok(parts[0]);
        }
        Ok(self.push(Node::Assemble { parts, offsets }, shape, t.dtype()))
    }

    /// A reshape that only inserts or removes dimensions of 1 reshapes chunk by chunk;
    /// otherwise `x` is chunked by rows and each output chunk (a run of rows, hence of
    /// the row-major order) is assembled from the runs of the input chunks it overlaps.
    fn emit_reshape(&mut self, t: &Tensor, g: &[usize], x: &Tensor) -> Tiled<u32> {
        let shape = chunk_shape(t, g);
        if squeeze_chunks(x, t.shape()).as_deref() == Some(t.chunks()) {
            let kept: Vec<usize> = (0..t.ndim()).filter(|&d| t.shape()[d] != 1).collect();
            let mut gx = vec![0; x.ndim()];
            for (k, d) in (0..x.ndim()).filter(|&d| x.shape()[d] != 1).enumerate() {
                gx[d] = g[kept[k]];
            }
            let xn = self.emit(x, &gx)?;
            return Ok(self.push(Node::Reshape { x: xn }, shape, t.dtype()));
        }
        if x.chunks().iter().skip(1).any(|c| c.len() > 1) || t.chunks().iter().skip(1).any(|c| c.len() > 1) {
            return Err(
                TensorError::UnknownShape { op: "reshape of a tensor split along more than rows".into() }.into()
            );
        }
        let row_out: u64 = t.shape().iter().skip(1).product();
        let row_in: u64 = x.shape().iter().skip(1).product();
        let off = chunk_offset(t, g);
        let (lo, hi) = match t.ndim() {
            0 => (0, 1),
            _ => (off[0] * row_out, (off[0] + shape[0]) * row_out),
        };
        let mut parts = Vec::new();
        let mut offsets = Vec::new();
        let mut c0 = 0u64;
        let x_rows = if x.ndim() == 0 { vec![1] } else { x.chunks()[0].clone() };
        for (i, &rows) in x_rows.iter().enumerate() {
            let (a, b) = (c0 * row_in, (c0 + rows) * row_in);
            c0 += rows;
            let (s, e) = (lo.max(a), hi.min(b));
            if s >= e {
                continue;
            }
            let mut gx = vec![0; x.ndim()];
            if let Some(first) = gx.first_mut() {
                *first = i;
            }
            let xn = self.emit(x, &gx)?;
            let flat = self.push(Node::Reshape { x: xn }, vec![b - a], x.dtype());
            let part = if (s, e) == (a, b) {
                flat
            } else {
                self.push(Node::View { x: flat, start: vec![s - a], step: vec![1] }, vec![e - s], x.dtype())
            };
            parts.push(part);
            offsets.push(vec![s - lo]);
        }
        let joined = match parts.len() {
            0 => self.push(Node::Const(Scalar::Bool(false)), vec![0], t.dtype()),
            1 => parts[0],
            _ => self.push(Node::Assemble { parts, offsets }, vec![hi - lo], x.dtype()),
        };
        Ok(self.push(Node::Reshape { x: joined }, shape, t.dtype()))
    }

    /// A dense operation on whole matrices.
    pub(crate) fn lin(&mut self, op: LinOp, args: &[u32], shape: Vec<u64>, dtype: DType) -> u32 {
        self.push(Node::Linalg { op, args: args.to_vec() }, shape, dtype)
    }

    /// Rows `lo..hi` of the matrix `x`.
    pub(crate) fn rows(&mut self, x: u32, lo: u64, hi: u64) -> u32 {
        let cols = self.shapes[x as usize][1];
        self.block(x, lo, hi, 0, cols)
    }

    /// Rows `r0..r1`, columns `c0..c1` of the matrix `x`.
    pub(crate) fn block(&mut self, x: u32, r0: u64, r1: u64, c0: u64, c1: u64) -> u32 {
        if self.shapes[x as usize] == [r1 - r0, c1 - c0] {
            return x;
        }
        let dtype = self.dtypes[x as usize];
        self.push(Node::View { x, start: vec![r0, c0], step: vec![1, 1] }, vec![r1 - r0, c1 - c0], dtype)
    }

    pub(crate) fn finish(self) -> (Program, Vec<usize>) {
        (Program { nodes: self.nodes, shapes: self.shapes, dtypes: self.dtypes }, self.inputs)
    }
}

/// The chunk holding position `pos` along a dimension, and where that chunk starts.
fn locate(chunks: &[u64], pos: u64) -> (usize, u64) {
    let mut lo = 0;
    for (i, &c) in chunks.iter().enumerate() {
        if pos < lo + c {
            return (i, lo);
        }
        lo += c;
    }
    (chunks.len().saturating_sub(1), lo - chunks.last().copied().unwrap_or(0))
}
