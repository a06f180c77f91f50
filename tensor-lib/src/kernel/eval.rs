//! The block-wise evaluator of a [`Program`].

use super::elementwise::{binary, scan, select, unary};
use super::random::{global_indices, random, uniform_run};
use super::{BLOCK, FftKind, KernelError, Node, Partial, Program, RandKind, ReduceOp, fft, sort};
use crate::data::{Buf, Chunk, ChunkRef, DType, numel};

struct Eval<'a> {
    p: &'a Program,
    inputs: &'a [ChunkRef<'a>],
    /// Whole values of broadcast operands, evaluated once.
    whole: Vec<Option<Buf>>,
    scratch: Vec<u64>,
    /// Nodes read by more than one operation (`x * x`): their current block is kept.
    shared: Vec<bool>,
    memo: Vec<Option<(usize, usize, Buf)>>,
}

impl<'a> Eval<'a> {
    fn new(p: &'a Program, inputs: &'a [ChunkRef<'a>]) -> Self {
        let mut uses = vec![0u32; p.nodes.len()];
        for node in &p.nodes {
            let ops: &[u32] = match node {
                Node::Unary { x, .. }
                | Node::Cast { x }
                | Node::Broadcast { x }
                | Node::Transpose { x }
                | Node::Permute { x, .. }
                | Node::View { x, .. }
                | Node::Reshape { x }
                | Node::ReduceLast { x, .. } => std::slice::from_ref(x),
                Node::Assemble { parts, .. } => parts,
                Node::Linalg { args, .. } => args,
                Node::Compress { x, m } => &[*x, *m],
                Node::Sort { x, .. } | Node::Unique { x, .. } | Node::Fft { x, .. } => std::slice::from_ref(x),
                Node::Search { a: many, v: one, .. } | Node::Take { parts: many, idx: one, .. } => {
                    for &o in many.iter().chain(std::iter::once(one)) {
                        if let Some(u) = uses.get_mut(o as usize) {
                            *u += 1;
                        }
                    }
                    &[]
                }
                Node::Scan { x, seed: Some(c), .. } => &[*x, *c],
                Node::Scan { x, seed: None, .. } => std::slice::from_ref(x),
                Node::Binary { a, b, .. } => &[*a, *b],
                Node::Where { c, a, b } => &[*c, *a, *b],
                _ => &[],
            };
            for &o in ops {
                if let Some(u) = uses.get_mut(o as usize) {
                    *u += 1;
                }
            }
        }
        Eval {
            p,
            inputs,
            whole: vec![None; p.nodes.len()],
            scratch: Vec::new(),
            shared: uses.iter().map(|&u| u > 1).collect(),
            memo: vec![None; p.nodes.len()],
        }
    }

    fn eval(&mut self, n: usize, s: usize, e: usize) -> Result<Buf, KernelError> {
        if !self.shared[n] {
            return self.eval_node(n, s, e);
        }
        if let Some((ms, me, b)) = &self.memo[n] {
            if (*ms, *me) == (s, e) {
                return Ok(b.clone());
            }
        }
        let b = self.eval_node(n, s, e)?;
        self.memo[n] = Some((s, e, b.clone()));
        Ok(b)
    }

    fn eval_node(&mut self, n: usize, s: usize, e: usize) -> Result<Buf, KernelError> {
        let shape = &self.p.shapes[n];
        let dtype = self.p.dtypes[n];
        let check = |x: u32| -> Result<usize, KernelError> {
            let x = x as usize;
            if x >= n {
                return Err(KernelError::Malformed { node: n, reason: format!("operand {x} is not an earlier node") });
            }
            Ok(x)
        };
        Ok(match &self.p.nodes[n] {
            Node::Input { arg } => self.input(*arg, shape)?.slice_as(s, e, dtype),
            Node::Const(v) => Buf::filled(*v, e - s).cast(dtype),
            Node::Random { kind, seed, offset, full } => {
                if offset.len() != shape.len() || full.len() != shape.len() {
                    return Err(KernelError::Malformed { node: n, reason: "random region of another rank".into() });
                }
                let nd = shape.len();
                if let (RandKind::Uniform { low, high }, DType::F64, true) = (kind, dtype, nd > 0) {
                    let span = high - low;
                    if (1..nd).all(|d| shape[d] == full[d]) {
                        // The chunk is one contiguous run of the tensor.
                        let base = offset[0] * full[1..].iter().product::<u64>();
                        let mut v = Vec::with_capacity(e - s);
                        uniform_run(*seed, base + s as u64, e - s, *low, span, &mut v);
                        return Ok(Buf::F64(v));
                    }
                    // Otherwise each row of the chunk is a contiguous run: walk them.
                    let last = shape[nd - 1] as usize;
                    let mut v = Vec::with_capacity(e - s);
                    let mut k = s;
                    while k < e {
                        let (row, col) = (k / last, k % last);
                        let run = (last - col).min(e - k);
                        let mut g = 0u64;
                        let mut rem = row as u64;
                        let mut idx = vec![0u64; nd];
                        for d in (0..nd - 1).rev() {
                            idx[d] = rem % shape[d];
                            rem /= shape[d];
                        }
                        idx[nd - 1] = col as u64;
                        for d in 0..nd {
                            g = g * full[d] + offset[d] + idx[d];
                        }
                        uniform_run(*seed, g, run, *low, span, &mut v);
                        k += run;
                    }
                    return Ok(Buf::F64(v));
                }
                let mut g = std::mem::take(&mut self.scratch);
                global_indices(shape, offset, full, s, e, &mut g);
                let out = random(*kind, *seed, &g, dtype);
                self.scratch = g;
                out
            }
            Node::Arange { start, step, offset } => {
                if start.dtype().is_float() || step.dtype().is_float() {
                    let (a, d) = (start.as_f64(), step.as_f64());
                    let v: Vec<f64> = (s..e).map(|i| a + d * (*offset + i as u64) as f64).collect();
                    Buf::F64(v).cast(dtype)
                } else {
                    // Exact: no integer range goes through float64.
                    let (a, d) = (start.as_i64(), step.as_i64());
                    let v: Vec<i64> =
                        (s..e).map(|i| a.wrapping_add(d.wrapping_mul((*offset + i as u64) as i64))).collect();
                    Buf::I64(v).cast(dtype)
                }
            }
            Node::Unary { op, x } => {
                let x = check(*x)?;
                let v = self.eval(x, s, e)?;
                unary(*op, v, dtype)
            }
            Node::Binary { op, a, b } => {
                let (a, b) = (check(*a)?, check(*b)?);
                let va = self.eval(a, s, e)?;
                // A constant right operand stays one element where `binary` takes a scalar.
                let vb = match &self.p.nodes[b] {
                    Node::Const(c) if e - s > 1 => Buf::filled(*c, 1).cast(self.p.dtypes[b]),
                    _ => self.eval(b, s, e)?,
                };
                binary(*op, va, vb).map_err(|err| KernelError::Numeric { reason: err.to_string() })?.cast(dtype)
            }
            Node::Where { c, a, b } => {
                let (c, a, b) = (check(*c)?, check(*a)?, check(*b)?);
                let vc = self.eval(c, s, e)?;
                let va = self.eval(a, s, e)?;
                let vb = self.eval(b, s, e)?;
                select(vc, va, vb, dtype)
            }
            Node::Cast { x } => {
                let x = check(*x)?;
                self.eval(x, s, e)?.cast(dtype)
            }
            Node::Broadcast { x } => {
                let x = check(*x)?;
                // Missing leading dimensions broadcast like dimensions of 1.
                let src = &self.p.shapes[x];
                let mut from = vec![1u64; shape.len().saturating_sub(src.len())];
                from.extend_from_slice(src);
                if from.len() != shape.len() || from.iter().zip(shape).any(|(f, t)| *f != *t && *f != 1) {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot broadcast {from:?} to {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                if whole.len() == 1 {
                    return Ok(whole.repeat_first(e - s).cast(dtype));
                }
                let idx = broadcast_indices(&from, shape, s, e);
                whole.gather(&idx).cast(dtype)
            }
            Node::Transpose { x } => {
                let x = check(*x)?;
                let from = self.p.shapes[x].clone();
                if from.len() != 2 || shape.len() != 2 || from[0] != shape[1] || from[1] != shape[0] {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot transpose {from:?} into {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                let (rows, cols) = (shape[0] as usize, shape[1] as usize);
                let idx: Vec<usize> = (s..e).map(|k| (k % cols) * rows + k / cols).collect();
                whole.gather(&idx).cast(dtype)
            }
            Node::Permute { x, perm } => {
                let x = check(*x)?;
                let from = self.p.shapes[x].clone();
                let nd = from.len();
                let mut seen = vec![false; nd];
                let valid = perm.len() == nd
                    && shape.len() == nd
                    && perm.iter().enumerate().all(|(d, &p)| {
                        let p = p as usize;
                        p < nd && !std::mem::replace(&mut seen[p], true) && from[p] == shape[d]
                    });
                if !valid {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("permutation {perm:?} does not take {from:?} to {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                let in_strides = strides(&from);
                let st: Vec<i64> = perm.iter().map(|&p| in_strides[p as usize] as i64).collect();
                whole.gather(&strided_indices(shape, 0, &st, s, e)).cast(dtype)
            }
            Node::View { .. } => {
                let (x, base, st) = self.view_geometry(n)?;
                if s == 0 && e == numel(shape) {
                    if let Some((c, starts, len)) = self.input_runs(n, x, base, &st) {
                        // A whole block of an input (a rechunk's piece): its rows copied
                        // straight from the chunk, not the chunk copied out first.
                        return Ok(c.runs(&starts, len).cast(dtype));
                    }
                }
                let whole = self.whole_of(x)?;
                whole.gather(&strided_indices(shape, base, &st, s, e)).cast(dtype)
            }
            Node::Assemble { parts, offsets } => {
                if self.whole[n].is_none() {
                    let all = self.assemble(n, shape, dtype, parts, offsets)?;
                    self.whole[n] = Some(all);
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Reshape { x } => {
                let x = check(*x)?;
                if numel(&self.p.shapes[x]) != numel(shape) {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot reshape {:?} into {shape:?}", self.p.shapes[x]),
                    });
                }
                self.eval(x, s, e)?.cast(dtype)
            }
            Node::Linalg { op: crate::linalg::LinOp::Complex(c), args } => {
                if self.whole[n].is_none() {
                    let (a, c) = (check(*args.first().unwrap_or(&u32::MAX))?, *c);
                    let sh = self.p.shapes[a].clone();
                    let (rows, cols) = match (args.len(), &sh[..]) {
                        (1, &[r, c]) => (r, c),
                        _ => return Err(KernelError::Malformed { node: n, reason: format!("{c:?} of {sh:?}") }),
                    };
                    let want = c.shape(rows, cols).map_err(|reason| KernelError::Malformed { node: n, reason })?;
                    if &want != shape {
                        return Err(KernelError::Malformed {
                            node: n,
                            reason: format!("{c:?} makes {want:?}, not {shape:?}"),
                        });
                    }
                    let Buf::C128(v) = self.take_whole(a)?.cast(DType::C128) else { unreachable!("cast") };
                    let out =
                        c.run(rows as usize, cols as usize, &v).map_err(|reason| KernelError::Numeric { reason })?;
                    self.whole[n] = Some(Buf::C128(out).cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Linalg { op, args } => {
                if self.whole[n].is_none() {
                    let mut dense = Vec::with_capacity(args.len());
                    for &a in args {
                        let a = check(a)?;
                        let sh = self.p.shapes[a].clone();
                        let Buf::F64(v) = self.whole_of(a)?.clone().cast(DType::F64) else { unreachable!("cast") };
                        let (rows, cols) = match sh[..] {
                            [r, c] => (r as usize, c as usize),
                            _ => {
                                return Err(KernelError::Malformed {
                                    node: n,
                                    reason: format!("{sh:?} is not a matrix"),
                                });
                            }
                        };
                        dense.push(crate::linalg::Dense::new(rows, cols, v));
                    }
                    let shapes: Vec<&[u64]> = args.iter().map(|&a| &self.p.shapes[a as usize][..]).collect();
                    let want = op.shape(&shapes).map_err(|reason| KernelError::Malformed { node: n, reason })?;
                    if &want != shape {
                        return Err(KernelError::Malformed {
                            node: n,
                            reason: format!("{op:?} makes {want:?}, not {shape:?}"),
                        });
                    }
                    let out = op.run(&dense).map_err(|reason| KernelError::Numeric { reason })?;
                    self.whole[n] = Some(Buf::F64(out.v).cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Compress { .. } => {
                return Err(KernelError::Malformed { node: n, reason: "a compress must be the program's root".into() });
            }
            Node::Scan { op, axis, x, seed } => {
                if self.whole[n].is_none() {
                    let x = check(*x)?;
                    let axis = *axis as usize;
                    let (outer, len, inner) = self.lanes(n, x, axis, shape, "scan")?;
                    let carry = match seed {
                        Some(c) => {
                            let c = check(*c)?;
                            let mut want = shape.clone();
                            want[axis] = 1;
                            if self.p.shapes[c] != want {
                                return Err(KernelError::Malformed {
                                    node: n,
                                    reason: format!("scan seed {:?}, expected {want:?}", self.p.shapes[c]),
                                });
                            }
                            Some(self.whole_of(c)?.clone().cast(dtype))
                        }
                        None => None,
                    };
                    let v = self.take_whole(x)?.cast(dtype);
                    self.whole[n] = Some(scan(*op, v, carry, outer, len, inner));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Sort { x, axis, descending, arg } => {
                if self.whole[n].is_none() {
                    let x = check(*x)?;
                    let (outer, len, inner) = self.lanes(n, x, *axis as usize, shape, "sort")?;
                    let v = self.take_whole(x)?;
                    let out = if *arg {
                        Buf::I64(sort::argsort_lanes(&v, outer, len, inner, *descending))
                    } else {
                        sort::sort_lanes(v, outer, len, inner, *descending)
                    };
                    self.whole[n] = Some(out.cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Fft { x, axis, kind, scale } => {
                if self.whole[n].is_none() {
                    let x = check(*x)?;
                    let (axis, xs) = (*axis as usize, &self.p.shapes[x]);
                    let out_len = match kind {
                        FftKind::RealInverse { n } => *n,
                        _ => xs.get(axis).copied().unwrap_or(0),
                    };
                    let fits = xs.len() == shape.len()
                        && axis < shape.len()
                        && shape[axis] == out_len
                        && (0..shape.len()).all(|d| d == axis || xs[d] == shape[d]);
                    if !fits || !self.p.dtypes[x].is_complex() {
                        return Err(KernelError::Malformed {
                            node: n,
                            reason: format!("{kind:?} along {axis} of {:?} {:?} into {shape:?}", self.p.dtypes[x], xs),
                        });
                    }
                    let outer = xs[..axis].iter().product::<u64>() as usize;
                    let inner = xs[axis + 1..].iter().product::<u64>() as usize;
                    let len = xs[axis] as usize;
                    let v = self.take_whole(x)?;
                    self.whole[n] = Some(fft::fft_lanes(v, *kind, outer, len, inner, *scale).cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Unique { .. } => {
                return Err(KernelError::Malformed { node: n, reason: "a unique must be the program's root".into() });
            }
            Node::Search { a, v, right } => {
                if self.whole[n].is_none() {
                    let v = check(*v)?;
                    if self.p.shapes[v] != *shape {
                        return Err(KernelError::Malformed {
                            node: n,
                            reason: format!("search of {:?} into {shape:?}", self.p.shapes[v]),
                        });
                    }
                    let values = self.whole_of(v)?.clone();
                    let mut total = vec![0i64; values.len()];
                    for &c in a {
                        let c = check(c)?;
                        if self.p.shapes[c].len() != 1 {
                            return Err(KernelError::Malformed {
                                node: n,
                                reason: "search in a chunk that is not 1-d".into(),
                            });
                        }
                        let sorted = self.whole_of(c)?.clone();
                        for (t, k) in total.iter_mut().zip(sort::count_before(&sorted, &values, *right)) {
                            *t += k;
                        }
                    }
                    self.whole[n] = Some(Buf::I64(total).cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Take { parts, idx, axis, along } => {
                if self.whole[n].is_none() {
                    let out = self.take(n, parts, *idx as usize, *axis as usize, *along, shape, dtype)?;
                    self.whole[n] = Some(out);
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::ReduceLast { op, x } => {
                let x = check(*x)?;
                let len = *self.p.shapes[x].last().unwrap_or(&1) as usize;
                let v = self.eval(x, s * len, e * len)?;
                if let (ReduceOp::Sum, Buf::F64(v), DType::F64) = (op, &v, dtype) {
                    if len > 0 && len <= 16 {
                        return Ok(Buf::F64(v.chunks_exact(len).map(|g| g.iter().sum()).collect()));
                    }
                }
                let p = Partial::of_groups(*op, v, len, vec![(e - s) as u64]);
                p.finish(self.p.dtypes[x]).data.cast(dtype)
            }
        })
    }
}

impl<'a> Eval<'a> {
    /// `(outer, len, inner)` of the lanes along `axis` of node `n`'s operand `x`, which
    /// must have `n`'s shape (a scan or a sort keeps it).
    fn lanes(
        &self,
        n: usize,
        x: usize,
        axis: usize,
        shape: &[u64],
        what: &str,
    ) -> Result<(usize, usize, usize), KernelError> {
        if self.p.shapes[x] != shape || axis >= shape.len() {
            return Err(KernelError::Malformed {
                node: n,
                reason: format!("{what} along {axis} of {:?} into {shape:?}", self.p.shapes[x]),
            });
        }
        let outer = shape[..axis].iter().product::<u64>() as usize;
        let inner = shape[axis + 1..].iter().product::<u64>() as usize;
        Ok((outer, shape[axis] as usize, inner))
    }

    /// Input `arg`, checked to have `shape`.
    fn input(&self, arg: u32, shape: &[u64]) -> Result<ChunkRef<'a>, KernelError> {
        let c = self.inputs.get(arg as usize).ok_or_else(|| KernelError::BadInput {
            arg,
            reason: format!("the task got {} inputs", self.inputs.len()),
        })?;
        if !c.shape_is(shape) {
            return Err(KernelError::BadInput { arg, reason: format!("shape {:?}, expected {:?}", c.shape(), shape) });
        }
        Ok(*c)
    }

    /// A [`Node::View`]'s operand, checked to hold the view, with the view's first
    /// element and its steps in the operand's elements.
    fn view_geometry(&self, n: usize) -> Result<(usize, i64, Vec<i64>), KernelError> {
        let Node::View { x, start, step } = &self.p.nodes[n] else { unreachable!("called on views") };
        let (x, shape) = (*x as usize, &self.p.shapes[n]);
        if x >= n {
            return Err(KernelError::Malformed { node: n, reason: format!("operand {x} is not an earlier node") });
        }
        let from = &self.p.shapes[x];
        let nd = from.len();
        let valid = start.len() == nd
            && step.len() == nd
            && shape.len() == nd
            && (0..nd).all(|d| {
                let last = start[d] as i64 + (shape[d] as i64 - 1) * step[d];
                step[d] != 0 && (shape[d] == 0 || (start[d] < from[d] && last >= 0 && (last as u64) < from[d]))
            });
        if !valid {
            return Err(KernelError::Malformed {
                node: n,
                reason: format!("view {start:?} step {step:?} of {shape:?} is outside {from:?}"),
            });
        }
        let in_strides = strides(from);
        let base: i64 = (0..nd).map(|d| (start[d] * in_strides[d]) as i64).sum();
        let st: Vec<i64> = (0..nd).map(|d| step[d] * in_strides[d] as i64).collect();
        Ok((x, base, st))
    }

    /// For a view `n` (of geometry `base`, `st`) of an input with contiguous rows: the
    /// input, where each row of the view starts in it, and the rows' length.
    fn input_runs(&self, n: usize, x: usize, base: i64, st: &[i64]) -> Option<(ChunkRef<'a>, Vec<usize>, usize)> {
        let (Node::Input { arg }, Some(1)) = (&self.p.nodes[x], st.last()) else { return None };
        let c = self.input(*arg, &self.p.shapes[x]).ok()?;
        let shape = &self.p.shapes[n];
        let (rows, len) = (&shape[..shape.len() - 1], shape[shape.len() - 1] as usize);
        Some((c, strided_indices(rows, base, &st[..st.len() - 1], 0, numel(rows)), len))
    }

    /// The whole value of node `x`, taken when nothing else reads it (else a copy).
    fn take_whole(&mut self, x: usize) -> Result<Buf, KernelError> {
        self.whole_of(x)?;
        Ok(if self.shared[x] { self.whole[x].clone() } else { self.whole[x].take() }.expect("just evaluated"))
    }

    /// The whole value of node `x` (evaluated once).
    fn whole_of(&mut self, x: usize) -> Result<&Buf, KernelError> {
        if self.whole[x].is_none() {
            let all = self.eval(x, 0, numel(&self.p.shapes[x]))?;
            self.whole[x] = Some(all);
        }
        Ok(self.whole[x].as_ref().expect("just set"))
    }

    /// A [`Node::Take`]: the positions are read first, and only the parts they hit are
    /// evaluated.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        n: usize,
        parts: &[u32],
        idx: usize,
        axis: usize,
        along: bool,
        shape: &[u64],
        dtype: DType,
    ) -> Result<Buf, KernelError> {
        let bad = |reason: String| KernelError::Malformed { node: n, reason };
        if idx >= n || parts.is_empty() || parts.iter().any(|&p| p as usize >= n) {
            return Err(bad("take of later nodes or of nothing".into()));
        }
        let first = self.p.shapes[parts[0] as usize].clone();
        if axis >= first.len() {
            return Err(bad(format!("take along {axis} of {first:?}")));
        }
        let mut lens = Vec::with_capacity(parts.len());
        for &p in parts {
            let sh = &self.p.shapes[p as usize];
            if sh.len() != first.len() || sh[..axis] != first[..axis] || sh[axis + 1..] != first[axis + 1..] {
                return Err(bad(format!("parts {first:?} and {sh:?} differ off the axis")));
            }
            lens.push(sh[axis]);
        }
        let pre = first[..axis].iter().product::<u64>() as usize;
        let post = first[axis + 1..].iter().product::<u64>() as usize;
        let Buf::I64(ix) = self.whole_of(idx)?.clone().cast(DType::I64) else { unreachable!("cast") };
        let m = if along { ix.len() / (pre * post).max(1) } else { ix.len() };
        if pre * m * post != numel(shape) || (along && ix.len() != pre * m * post) {
            return Err(bad(format!("take of {} positions into {shape:?}", ix.len())));
        }
        let total: u64 = lens.iter().sum();
        let mut starts = Vec::with_capacity(lens.len());
        let mut acc = 0u64;
        for &l in &lens {
            starts.push(acc);
            acc += l;
        }
        // Per part: where its picked elements go, and where they are in it.
        let mut picks: Vec<(Vec<usize>, Vec<usize>)> = vec![(Vec::new(), Vec::new()); parts.len()];
        for p in 0..pre {
            for j in 0..m {
                for q in 0..post {
                    let dst = (p * m + j) * post + q;
                    let raw = if along { ix[dst] } else { ix[j] };
                    let i = if raw < 0 { raw + total as i64 } else { raw };
                    if i < 0 || i as u64 >= total {
                        return Err(KernelError::OutOfBounds { index: raw, axis: axis as u32, size: total });
                    }
                    let k = starts.partition_point(|&s| s <= i as u64) - 1;
                    let local = (i as u64 - starts[k]) as usize;
                    picks[k].0.push(dst);
                    picks[k].1.push((p * lens[k] as usize + local) * post + q);
                }
            }
        }
        let mut out = Buf::zeros(dtype, numel(shape));
        for (k, (dst, src)) in picks.iter().enumerate() {
            if !dst.is_empty() {
                let part = self.whole_of(parts[k] as usize)?.gather(src).cast(dtype);
                out.scatter(dst, &part);
            }
        }
        Ok(out)
    }

    fn assemble(
        &mut self,
        n: usize,
        shape: &[u64],
        dtype: DType,
        parts: &[u32],
        offsets: &[Vec<u64>],
    ) -> Result<Buf, KernelError> {
        let bad = |reason: String| KernelError::Malformed { node: n, reason };
        if parts.len() != offsets.len() {
            return Err(bad("one offset per part".into()));
        }
        let total = numel(shape);
        let mut out: Option<Buf> = None;
        let mut covered = 0usize;
        let out_strides = strides(shape);
        for (&part, off) in parts.iter().zip(offsets) {
            let part = part as usize;
            if part >= n {
                return Err(bad(format!("operand {part} is not an earlier node")));
            }
            let ps = self.p.shapes[part].clone();
            if ps.len() != shape.len() || off.len() != shape.len() || (0..ps.len()).any(|d| off[d] + ps[d] > shape[d]) {
                return Err(bad(format!("part of {ps:?} at {off:?} is outside {shape:?}")));
            }
            let base: i64 = (0..ps.len()).map(|d| (off[d] * out_strides[d]) as i64).sum();
            let st: Vec<i64> = out_strides.iter().map(|&x| x as i64).collect();
            let o = out.get_or_insert_with(|| Buf::zeros(dtype, total));
            if let (Node::View { .. }, Some((&len, rows))) = (&self.p.nodes[part], ps.split_last()) {
                // A piece of an input, of this dtype: copied row by row straight into place.
                let (x, vbase, vst) = self.view_geometry(part)?;
                if let Some((c, from, _)) = self.input_runs(part, x, vbase, &vst).filter(|r| r.0.dtype() == dtype) {
                    let at = strided_indices(rows, base, &st[..st.len() - 1], 0, numel(rows));
                    c.copy_runs(o, &from, &at, len as usize);
                    covered += numel(&ps);
                    continue;
                }
            }
            let v = self.eval(part, 0, numel(&ps))?.cast(dtype);
            match ps.split_last() {
                // Row by row: each row of the part is a run of the output.
                Some((&len, rows)) if len > 0 => {
                    let len = len as usize;
                    let starts = strided_indices(rows, base, &st[..st.len() - 1], 0, numel(rows));
                    for (r, &at) in starts.iter().enumerate() {
                        o.write_at(at, &v, r * len, len);
                    }
                }
                _ => o.scatter(&strided_indices(&ps, base, &st, 0, v.len()), &v),
            }
            covered += v.len();
        }
        if covered != total {
            return Err(bad(format!("parts cover {covered} of {total} elements")));
        }
        Ok(out.unwrap_or_else(|| Buf::with_capacity(dtype, 0)))
    }
}

/// Row-major strides (in elements) of `shape`.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut st = vec![0u64; shape.len()];
    let mut acc = 1u64;
    for d in (0..shape.len()).rev() {
        st[d] = acc;
        acc *= shape[d];
    }
    st
}

/// For flat indices `s..e` of a box of `shape`, the source positions `base + Σ i_d·st_d`.
fn strided_indices(shape: &[u64], base: i64, st: &[i64], s: usize, e: usize) -> Vec<usize> {
    let nd = shape.len();
    let mut out = Vec::with_capacity(e - s);
    if s >= e {
        return out;
    }
    let mut idx = vec![0u64; nd];
    let mut rem = s as u64;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let mut pos: i64 = base + (0..nd).map(|d| idx[d] as i64 * st[d]).sum::<i64>();
    for _ in s..e {
        out.push(pos as usize);
        // Increment the multi-index, carrying.
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            pos += st[d];
            if idx[d] < shape[d] {
                break;
            }
            pos -= st[d] * shape[d] as i64;
            idx[d] = 0;
        }
    }
    out
}

fn broadcast_indices(from: &[u64], to: &[u64], s: usize, e: usize) -> Vec<usize> {
    let nd = to.len();
    let mut strides = vec![0usize; nd];
    let mut acc = 1usize;
    for d in (0..nd).rev() {
        strides[d] = if from[d] == 1 { 0 } else { acc };
        acc *= from[d] as usize;
    }
    (s..e)
        .map(|k| {
            let mut rem = k;
            let mut src = 0;
            for d in (0..nd).rev() {
                let i = rem % to[d] as usize;
                rem /= to[d] as usize;
                src += i * strides[d];
            }
            src
        })
        .collect()
}

impl Program {
    fn root(&self) -> Result<usize, KernelError> {
        if self.nodes.is_empty() || self.shapes.len() != self.nodes.len() || self.dtypes.len() != self.nodes.len() {
            return Err(KernelError::Malformed {
                node: 0,
                reason: "empty, or shapes/dtypes do not match nodes".into(),
            });
        }
        Ok(self.nodes.len() - 1)
    }

    /// Evaluates the program into a whole chunk.
    pub fn run(&self, inputs: &[ChunkRef<'_>]) -> Result<Chunk, KernelError> {
        let root = self.root()?;
        let n = numel(&self.shapes[root]);
        let mut ev = Eval::new(self, inputs);
        if let Node::Compress { x, m } = self.nodes[root] {
            let (x, m) = (x as usize, m as usize);
            if x >= root || m >= root || numel(&self.shapes[x]) != n || numel(&self.shapes[m]) != n {
                return Err(KernelError::Malformed { node: root, reason: "compress of mismatched operands".into() });
            }
            let mut out = Buf::with_capacity(self.dtypes[root], 0);
            let mut s = 0;
            while s < n {
                let e = (s + BLOCK).min(n);
                let Buf::Bool(keep) = ev.eval(m, s, e)?.cast(DType::Bool) else { unreachable!("cast to bool") };
                let idx: Vec<usize> = keep.iter().enumerate().filter_map(|(i, &k)| k.then_some(i)).collect();
                out.extend(&ev.eval(x, s, e)?.gather(&idx).cast(self.dtypes[root]));
                s = e;
            }
            return Ok(Chunk { shape: vec![out.len() as u64], data: out });
        }
        if let Node::Unique { x, counts, equal_nan } = self.nodes[root] {
            let x = x as usize;
            if x >= root || self.shapes[x].len() != 1 || self.shapes[x] != self.shapes[root] {
                return Err(KernelError::Malformed { node: root, reason: "unique of a value that is not 1-d".into() });
            }
            let sorted = ev.eval(x, 0, n)?;
            let (values, occurs) = sort::runs(&sorted, equal_nan);
            let out = if counts { Buf::I64(occurs) } else { values }.cast(self.dtypes[root]);
            return Ok(Chunk { shape: vec![out.len() as u64], data: out });
        }
        if matches!(self.nodes[root], Node::Fft { .. } | Node::Sort { .. } | Node::Assemble { .. }) {
            // Computed whole anyway: the value itself is the chunk, not a copy in blocks.
            ev.eval(root, 0, 0)?;
            if let Some(all) = ev.whole[root].take() {
                return Ok(Chunk { shape: self.shapes[root].clone(), data: all });
            }
        }
        let mut out = Buf::with_capacity(self.dtypes[root], n);
        let mut s = 0;
        while s < n {
            let e = (s + BLOCK).min(n);
            out.extend(&ev.eval(root, s, e)?);
            s = e;
        }
        Ok(Chunk { shape: self.shapes[root].clone(), data: out })
    }

    /// Evaluates the program and reduces its result over every axis, block by block.
    pub fn run_reduce(&self, op: ReduceOp, inputs: &[ChunkRef<'_>]) -> Result<Partial, KernelError> {
        let root = self.root()?;
        let n = numel(&self.shapes[root]);
        let mut ev = Eval::new(self, inputs);
        let mut acc = Partial::empty(op, self.dtypes[root], Vec::new());
        let mut s = 0;
        while s < n {
            let e = (s + BLOCK).min(n);
            let block = ev.eval(root, s, e)?;
            let mut part = Partial::of_groups(op, block, e - s, Vec::new());
            part.map_idx(|_, i| i + s as i64);
            acc.combine(&part);
            s = e;
        }
        Ok(acc)
    }
}
