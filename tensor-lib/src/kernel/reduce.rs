//! Reduction state: a [`Partial`] folds blocks of a chunk and combines with others
//! (Chan's formula for variances), then finishes into the output chunk.

use super::ReduceOp;
use crate::data::{Buf, C128, Chunk, DType, Elem, Scalar, numel};
use crate::with_buf;
use ares_tileable::scalar::Num;

/// A reduction in progress: enough state to combine with others and to finish.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Partial {
    /// The reduction.
    pub op: ReduceOp,
    /// Shape of the (kept) result elements.
    pub shape: Vec<u64>,
    /// Elements folded into each result element.
    pub count: u64,
    /// Sum, product, min, max, any or all; the running mean for mean, var and std
    /// (complex128 for a complex mean, else float64).
    pub acc: Buf,
    /// Sum of squared deviations from the mean (var/std only).
    pub m2: Option<Vec<f64>>,
    /// Where each extreme was found (argmin/argmax only).
    pub idx: Option<Vec<i64>>,
}

fn acc_dtype(op: ReduceOp, x: DType) -> DType {
    match op {
        ReduceOp::Mean if x.is_complex() => DType::C128,
        ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => DType::F64,
        ReduceOp::Any | ReduceOp::All => DType::Bool,
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax => x,
        ReduceOp::Sum | ReduceOp::Prod => op.out_dtype(x),
    }
}

fn identity(op: ReduceOp, dtype: DType) -> Scalar {
    match op {
        ReduceOp::All => Scalar::Bool(true),
        ReduceOp::Any => Scalar::Bool(false),
        ReduceOp::Prod => Scalar::I64(1).cast(dtype),
        _ => Scalar::I64(0).cast(dtype),
    }
}

impl Partial {
    /// Reduces `x` (elements of groups of `group` consecutive values, one group per result
    /// element) into a partial of `shape`.
    pub fn of_groups(op: ReduceOp, x: Buf, group: usize, shape: Vec<u64>) -> Partial {
        if group == 0 {
            // Groups of nothing (an empty axis): every result element is empty.
            return Partial::empty(op, x.dtype(), shape);
        }
        let n = x.len() / group;
        let count = group as u64;
        if let (ReduceOp::Sum, Buf::Bool(v)) = (op, &x) {
            let acc = (0..n).map(|i| v[i * group..(i + 1) * group].iter().filter(|b| **b).count() as i64).collect();
            return Partial { op, shape, count, acc: Buf::I64(acc), m2: None, idx: None };
        }
        match op {
            ReduceOp::Mean if x.dtype().is_complex() => {
                let Buf::C128(v) = x.cast(DType::C128) else { unreachable!("cast") };
                let scale = C128::new(group as f64, 0.0);
                let acc = v.chunks(group).take(n).map(|g| g.iter().fold(C128::default(), |a, &b| a.add(b)).div(scale));
                Partial { op, shape, count, acc: Buf::C128(acc.collect()), m2: None, idx: None }
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                let max = op == ReduceOp::ArgMax;
                let mut idx = Vec::with_capacity(n);
                let acc = with_buf!(&x, v => {
                    let mut best = Vec::with_capacity(n);
                    for g in 0..n {
                        let run = &v[g * group..(g + 1) * group];
                        let mut k = 0;
                        for (i, &y) in run.iter().enumerate().skip(1) {
                            if better(y, run[k], max) {
                                k = i;
                            }
                        }
                        idx.push(k as i64);
                        best.push(run[k]);
                    }
                    Elem::wrap(best)
                });
                Partial { op, shape, count, acc, m2: None, idx: Some(idx) }
            }
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => {
                let Buf::F64(v) = x.cast(DType::F64) else { unreachable!() };
                let mut mean = Vec::with_capacity(n);
                let mut m2 = Vec::with_capacity(n);
                for g in v.chunks(group.max(1)).take(n) {
                    let m = g.iter().sum::<f64>() / group as f64;
                    mean.push(m);
                    if op != ReduceOp::Mean {
                        m2.push(g.iter().map(|x| (x - m) * (x - m)).sum());
                    }
                }
                let m2 = (op != ReduceOp::Mean).then_some(m2);
                Partial { op, shape, count, acc: Buf::F64(mean), m2, idx: None }
            }
            _ => {
                let t = acc_dtype(op, x.dtype());
                let x = x.cast(t);
                let acc = fold_groups(op, &x, group, n);
                Partial { op, shape, count, acc, m2: None, idx: None }
            }
        }
    }

    /// An empty partial of `shape` (combining with it changes nothing).
    pub fn empty(op: ReduceOp, dtype: DType, shape: Vec<u64>) -> Partial {
        let n = numel(&shape);
        let t = acc_dtype(op, dtype);
        let m2 = matches!(op, ReduceOp::Var | ReduceOp::Std).then(|| vec![0.0; n]);
        let idx = op.is_arg().then(|| vec![0; n]);
        Partial { op, shape, count: 0, acc: Buf::filled(identity(op, t), n), m2, idx }
    }

    /// Rewrites the found positions (argmin/argmax), e.g. from chunk-local to global.
    pub fn map_idx(&mut self, f: impl Fn(usize, i64) -> i64) {
        if let Some(idx) = self.idx.as_mut() {
            for (g, i) in idx.iter_mut().enumerate() {
                *i = f(g, *i);
            }
        }
    }

    /// Folds `other` (same op and shape) into `self`.
    pub fn combine(&mut self, other: &Partial) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        match self.op {
            ReduceOp::Mean if matches!(self.acc, Buf::C128(_)) => {
                let (Buf::C128(ma), Buf::C128(mb)) = (&mut self.acc, &other.acc) else { unreachable!("complex means") };
                let w = C128::new(other.count as f64 / (self.count + other.count) as f64, 0.0);
                for (a, &b) in ma.iter_mut().zip(mb) {
                    *a = a.add(b.sub(*a).mul(w));
                }
            }
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => {
                let (Buf::F64(ma), Buf::F64(mb)) = (&mut self.acc, &other.acc) else { unreachable!() };
                let (na, nb) = (self.count as f64, other.count as f64);
                let n = na + nb;
                for i in 0..ma.len() {
                    let delta = mb[i] - ma[i];
                    if let (Some(m2a), Some(m2b)) = (self.m2.as_mut(), other.m2.as_ref()) {
                        m2a[i] += m2b[i] + delta * delta * na * nb / n;
                    }
                    ma[i] += delta * nb / n;
                }
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                let max = self.op == ReduceOp::ArgMax;
                let (Some(ia), Some(ib)) = (self.idx.as_mut(), other.idx.as_ref()) else {
                    unreachable!("arg partials keep positions")
                };
                fn pick<T: Elem>(a: &mut [T], b: &Buf, ia: &mut [i64], ib: &[i64], max: bool) {
                    let b = T::unwrap(b)
                        .unwrap_or_else(|| unreachable!("arg partials of {:?} and {:?}", T::DTYPE, b.dtype()));
                    for i in 0..a.len() {
                        let take = if better(b[i], a[i], max) {
                            true
                        } else {
                            // Equal (or both NaN): the first position wins, as in numpy.
                            !better(a[i], b[i], max) && ib[i] < ia[i]
                        };
                        if take {
                            a[i] = b[i];
                            ia[i] = ib[i];
                        }
                    }
                }
                with_buf!(&mut self.acc, a => pick(a, &other.acc, ia, ib, max))
            }
            op => {
                let both = {
                    let mut joined = self.acc.clone();
                    joined.extend(&other.acc);
                    joined
                };
                // Interleave: element i of each side forms a group of two.
                let n = self.acc.len();
                let idx: Vec<usize> = (0..n).flat_map(|i| [i, i + n]).collect();
                self.acc = fold_groups(op, &both.gather(&idx), 2, n);
            }
        }
        self.count += other.count;
    }

    /// The reduction's result, as a chunk of `shape`.
    pub fn finish(&self, x_dtype: DType) -> Chunk {
        let out = self.op.out_dtype(x_dtype);
        let data = match self.op {
            ReduceOp::Mean if self.count == 0 => Buf::filled(Scalar::F64(f64::NAN), self.acc.len()).cast(out),
            ReduceOp::Mean => self.acc.clone().cast(out),
            ReduceOp::Var | ReduceOp::Std => {
                let m2 = self.m2.as_ref().expect("var keeps m2");
                let v: Vec<f64> = m2
                    .iter()
                    .map(|s| {
                        let var = s / self.count as f64;
                        if self.op == ReduceOp::Std { var.sqrt() } else { var }
                    })
                    .collect();
                Buf::F64(v).cast(out)
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => Buf::I64(self.idx.clone().expect("arg partials keep positions")),
            _ => self.acc.clone().cast(out),
        };
        Chunk { shape: self.shape.clone(), data }
    }
}

fn fold_groups(op: ReduceOp, x: &Buf, group: usize, n: usize) -> Buf {
    fn fold<T: Copy>(v: &[T], group: usize, n: usize, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
        (0..n).map(|i| v[i * group..(i + 1) * group].iter().fold(init, |a, &b| f(a, b))).collect()
    }
    match (op, x) {
        (ReduceOp::Any, Buf::Bool(v)) => Buf::Bool(fold(v, group, n, false, |a, b| a | b)),
        (ReduceOp::All, Buf::Bool(v)) => Buf::Bool(fold(v, group, n, true, |a, b| a & b)),
        (ReduceOp::Min | ReduceOp::Max, Buf::Bool(v)) => {
            let max = op == ReduceOp::Max;
            Buf::Bool((0..n).map(|i| fold_minmax(&v[i * group..(i + 1) * group], max)).collect())
        }
        (ReduceOp::Sum, Buf::I64(v)) => Buf::I64(fold(v, group, n, 0, |a, b| a.wrapping_add(b))),
        (ReduceOp::Prod, Buf::I64(v)) => Buf::I64(fold(v, group, n, 1, |a, b| a.wrapping_mul(b))),
        (ReduceOp::Sum, Buf::U64(v)) => Buf::U64(fold(v, group, n, 0, |a, b| a.wrapping_add(b))),
        (ReduceOp::Prod, Buf::U64(v)) => Buf::U64(fold(v, group, n, 1, |a, b| a.wrapping_mul(b))),
        (ReduceOp::Sum, Buf::F32(v)) => {
            Buf::F32((0..n).map(|i| pairwise_f32(&v[i * group..(i + 1) * group])).collect())
        }
        (ReduceOp::Sum, Buf::F64(v)) => Buf::F64((0..n).map(|i| pairwise(&v[i * group..(i + 1) * group])).collect()),
        (ReduceOp::Prod, Buf::F32(v)) => Buf::F32(fold(v, group, n, 1.0, |a, b| a * b)),
        (ReduceOp::Prod, Buf::F64(v)) => Buf::F64(fold(v, group, n, 1.0, |a, b| a * b)),
        (ReduceOp::Sum | ReduceOp::Prod, Buf::C64(v)) => {
            let one = crate::data::C64::new(if op == ReduceOp::Sum { 0.0 } else { 1.0 }, 0.0);
            Buf::C64(fold(v, group, n, one, |a, b| if op == ReduceOp::Sum { a.add(b) } else { a.mul(b) }))
        }
        (ReduceOp::Sum | ReduceOp::Prod, Buf::C128(v)) => {
            let one = C128::new(if op == ReduceOp::Sum { 0.0 } else { 1.0 }, 0.0);
            Buf::C128(fold(v, group, n, one, |a, b| if op == ReduceOp::Sum { a.add(b) } else { a.mul(b) }))
        }
        (ReduceOp::Min | ReduceOp::Max, x) => {
            let max = op == ReduceOp::Max;
            with_buf!(x, v => Elem::wrap((0..n).map(|i| fold_minmax(&v[i * group..(i + 1) * group], max)).collect()))
        }
        (op, x) => unreachable!("{op:?} accumulates in another type than {:?}", x.dtype()),
    }
}

/// Whether `y` beats the current extreme `x` (NaN beats everything but NaN, as numpy's
/// argmax returns the first NaN).
fn better<T: Elem>(y: T, x: T, max: bool) -> bool {
    #[allow(clippy::eq_op)]
    let (y_nan, x_nan) = (y != y, x != x);
    if x_nan {
        return false;
    }
    y_nan || (max && y > x) || (!max && y < x)
}

/// Min or max propagating NaN, as numpy does.
fn fold_minmax<T: Elem>(v: &[T], max: bool) -> T {
    let mut best = v[0];
    for &x in &v[1..] {
        #[allow(clippy::eq_op)]
        let x_nan = x != x;
        #[allow(clippy::eq_op)]
        let best_nan = best != best;
        if best_nan {
            break;
        }
        if x_nan || (max && x > best) || (!max && x < best) {
            best = x;
        }
    }
    best
}

/// Pairwise summation (numpy's, for accuracy on long runs).
fn pairwise(v: &[f64]) -> f64 {
    if v.len() <= 128 {
        let mut acc = [0.0f64; 8];
        let mut chunks = v.chunks_exact(8);
        for c in &mut chunks {
            for k in 0..8 {
                acc[k] += c[k];
            }
        }
        acc.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
    } else {
        let mid = v.len() / 2;
        pairwise(&v[..mid]) + pairwise(&v[mid..])
    }
}

fn pairwise_f32(v: &[f32]) -> f32 {
    if v.len() <= 128 {
        v.iter().sum()
    } else {
        let mid = v.len() / 2;
        pairwise_f32(&v[..mid]) + pairwise_f32(&v[mid..])
    }
}
