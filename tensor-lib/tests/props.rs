//! Property tests: random shapes, chunkings (uneven last chunks, size 1), dtypes and
//! broadcasting, with a direct ndarray computation as the oracle. One cluster per
//! property; every case runs real chunk tasks on worker processes.

use ares_tensor::kernel::BinOp;
use ares_tensor::{DType, ReduceOp, Session, Tensor, from_array};
use ndarray::{ArrayD, Axis, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cluster() {
    ares::init_with(ares::Config::default().num_cpus(2)).expect("init");
}

/// A shape of 1 to 3 dimensions and a chunking of it.
fn shape_and_chunks() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1usize..9, 1..=3).prop_flat_map(|shape| {
        let chunks: Vec<_> = shape.iter().map(|&d| 1..=d).collect();
        (Just(shape), chunks)
    })
}

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![Just(DType::F64), Just(DType::F32), Just(DType::I64), Just(DType::I32), Just(DType::Bool)]
}

/// Small integers (0/1 for bool), so every dtype holds them and arithmetic is exact.
fn values(shape: &[usize], dtype: DType, seed: u64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let v = (0..n as u64)
        .map(|i| {
            let h = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(seed.wrapping_mul(0xBF58_476D_1CE4_E5B9));
            let h = h >> 40;
            if dtype == DType::Bool { (h % 2) as f64 } else { (h % 9) as f64 - 4.0 }
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

fn tensor(x: &ArrayD<f64>, dtype: DType, chunks: &[usize]) -> Tensor {
    match dtype {
        DType::F64 => from_array(x, chunks),
        DType::F32 => from_array(&x.mapv(|v| v as f32), chunks),
        DType::I64 => from_array(&x.mapv(|v| v as i64), chunks),
        DType::I32 => from_array(&x.mapv(|v| v as i32), chunks),
        DType::Bool => from_array(&x.mapv(|v| v != 0.0), chunks),
        other => unreachable!("the properties draw no {other:?}"),
    }
    .unwrap()
}

fn op() -> impl Strategy<Value = BinOp> {
    prop_oneof![
        Just(BinOp::Add),
        Just(BinOp::Sub),
        Just(BinOp::Mul),
        Just(BinOp::Maximum),
        Just(BinOp::Minimum),
        Just(BinOp::Lt),
        Just(BinOp::Le),
        Just(BinOp::Gt),
        Just(BinOp::Ge),
        Just(BinOp::Eq),
        Just(BinOp::Ne),
        Just(BinOp::And),
        Just(BinOp::Or),
    ]
}

fn oracle(op: BinOp, a: f64, b: f64, bools: bool) -> f64 {
    let t = |c: bool| if c { 1.0 } else { 0.0 };
    match op {
        BinOp::Add if bools => t(a != 0.0 || b != 0.0),
        BinOp::Mul if bools => t(a != 0.0 && b != 0.0),
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Maximum => a.max(b),
        BinOp::Minimum => a.min(b),
        BinOp::Lt => t(a < b),
        BinOp::Le => t(a <= b),
        BinOp::Gt => t(a > b),
        BinOp::Ge => t(a >= b),
        BinOp::Eq => t(a == b),
        BinOp::Ne => t(a != b),
        BinOp::And => t(a != 0.0 && b != 0.0),
        BinOp::Or => t(a != 0.0 || b != 0.0),
        _ => unreachable!(),
    }
}

#[test]
fn binary_operations_broadcast_promote_and_match_the_oracle() {
    cluster();
    let s = Session::new();
    let strategy = (
        shape_and_chunks(),
        dtype(),
        dtype(),
        op(),
        any::<u64>(),
        prop::collection::vec(any::<bool>(), 3),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(Config { cases: 64, ..Config::default() });
    runner
        .run(&strategy, |((shape, chunks), da, db, op, seed, squash, drop_lead)| {
            // The right operand: some dimensions squashed to 1, maybe the leading one dropped.
            let mut bshape: Vec<usize> = shape.iter().zip(&squash).map(|(&d, &q)| if q { 1 } else { d }).collect();
            let mut bchunks: Vec<usize> = chunks.iter().zip(&squash).map(|(&c, &q)| if q { 1 } else { c }).collect();
            if drop_lead && bshape.len() > 1 {
                bshape.remove(0);
                bchunks.remove(0);
            }
            let (x, y) = (values(&shape, da, seed), values(&bshape, db, seed ^ 1));
            let (a, b) = (tensor(&x, da, &chunks), tensor(&y, db, &bchunks));
            let bools = da == DType::Bool && db == DType::Bool;
            let got = a.binary(op, &b);
            if op == BinOp::Sub && bools {
                prop_assert!(got.is_err(), "numpy refuses bool - bool");
                return Ok(());
            }
            let got = got.unwrap().fetch::<f64>(&s).unwrap();
            let yb = y.broadcast(IxDyn(&shape)).unwrap();
            let want = ndarray::Zip::from(&x).and(&yb).map_collect(|&p, &q| oracle(op, p, q, bools));
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

fn reduce_op() -> impl Strategy<Value = ReduceOp> {
    prop_oneof![
        Just(ReduceOp::Sum),
        Just(ReduceOp::Prod),
        Just(ReduceOp::Min),
        Just(ReduceOp::Max),
        Just(ReduceOp::Mean)
    ]
}

#[test]
fn reductions_match_the_oracle_for_any_axes_and_chunking() {
    cluster();
    let s = Session::new();
    let strategy = (
        shape_and_chunks(),
        dtype(),
        reduce_op(),
        any::<u64>(),
        prop::collection::vec(any::<bool>(), 3),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(Config { cases: 64, ..Config::default() });
    runner
        .run(&strategy, |((shape, chunks), dt, op, seed, pick, keepdims)| {
            let x =
                values(&shape, dt, seed).mapv(|v| if op == ReduceOp::Prod { v.signum() * v.abs().min(2.0) } else { v });
            let a = tensor(&x, dt, &chunks);
            let axes: Vec<usize> = (0..shape.len()).filter(|&d| pick[d]).collect();
            let got = a.reduce(op, Some(&axes), keepdims).unwrap();
            prop_assert_eq!(got.dtype(), op.out_dtype(dt));
            let got = got.fetch::<f64>(&s).unwrap();
            let mut want = x.clone();
            for &ax in axes.iter().rev() {
                want = match op {
                    ReduceOp::Sum => want.sum_axis(Axis(ax)),
                    ReduceOp::Prod => want.map_axis(Axis(ax), |l| l.iter().product()),
                    ReduceOp::Min => want.map_axis(Axis(ax), |l| l.iter().copied().fold(f64::INFINITY, f64::min)),
                    ReduceOp::Max => want.map_axis(Axis(ax), |l| l.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
                    ReduceOp::Mean => want.mean_axis(Axis(ax)).unwrap(),
                    _ => unreachable!(),
                };
                if keepdims {
                    want = want.insert_axis(Axis(ax));
                }
            }
            // Bool min/max and integer means are exact here; float32 means round.
            let tol = if dt == DType::F32 { 1e-5 } else { 1e-12 };
            prop_assert_eq!(got.shape(), want.shape());
            for (g, w) in got.iter().zip(want.iter()) {
                prop_assert!(
                    (g - w).abs() <= tol * (1.0 + w.abs()),
                    "{} vs {} ({:?} {:?} axes {:?})",
                    g,
                    w,
                    op,
                    dt,
                    axes
                );
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

/// Python's `slice.indices` positions, written independently of the library.
fn slice_positions(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<usize> {
    let n = n as i64;
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let b = start.map_or(0, |v| norm(v).clamp(0, n));
        let e = stop.map_or(n, |v| norm(v).clamp(0, n));
        let mut i = b;
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else {
        let b = start.map_or(n - 1, |v| norm(v).clamp(-1, n - 1));
        let e = stop.map_or(-1, |v| norm(v).clamp(-1, n - 1));
        let mut i = b;
        while i > e {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

fn bound() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![Just(None), (-10i64..10).prop_map(Some)]
}

/// Which manipulation a case checks.
#[derive(Clone, Debug)]
enum Manip {
    Slice(Vec<(Option<i64>, Option<i64>, i64)>),
    Rechunk(Vec<usize>),
    Reshape(usize),
    Permute(u64),
    Concat(usize, usize),
    Stack(usize),
    Mask,
    Arg(bool, Option<usize>),
}

fn manip() -> impl Strategy<Value = Manip> {
    let step = prop_oneof![1i64..4, -3i64..=-1];
    prop_oneof![
        prop::collection::vec((bound(), bound(), step), 0..=3).prop_map(Manip::Slice),
        prop::collection::vec(1usize..9, 3).prop_map(Manip::Rechunk),
        (0usize..4).prop_map(Manip::Reshape),
        any::<u64>().prop_map(Manip::Permute),
        (0usize..3, 1usize..5).prop_map(|(a, c)| Manip::Concat(a, c)),
        (0usize..4).prop_map(Manip::Stack),
        Just(Manip::Mask),
        (any::<bool>(), prop::option::of(0usize..3)).prop_map(|(m, a)| Manip::Arg(m, a)),
    ]
}

#[test]
fn manipulations_match_the_oracle() {
    use ares_tensor::Slice;
    cluster();
    let s = Session::new();
    let strategy = (shape_and_chunks(), dtype(), manip(), any::<u64>());
    let mut runner = TestRunner::new(Config { cases: 96, ..Config::default() });
    runner
        .run(&strategy, |((shape, chunks), dt, m, seed)| {
            let x = values(&shape, dt, seed);
            let a = tensor(&x, dt, &chunks);
            let nd = shape.len();
            let (got, want): (Tensor, ArrayD<f64>) = match m.clone() {
                Manip::Slice(index) => {
                    let index: Vec<_> = index.into_iter().take(nd).collect();
                    let sl: Vec<Slice> = index.iter().map(|&(b, e, st)| Slice::new(b, e, st)).collect();
                    let mut want = x.clone();
                    for (d, &(b, e, st)) in index.iter().enumerate() {
                        want = want.select(Axis(d), &slice_positions(shape[d], b, e, st));
                    }
                    (a.slice(&sl).unwrap(), want)
                }
                Manip::Rechunk(c) => (a.rechunk(&c[..nd]).unwrap(), x.clone()),
                Manip::Reshape(k) => {
                    let n: usize = shape.iter().product();
                    // Flat, a column, the reversed shape, or two dimensions by a divisor.
                    let spec: Vec<i64> = match k {
                        0 => vec![-1],
                        1 => vec![-1, 1],
                        2 => shape.iter().rev().map(|&d| d as i64).collect(),
                        _ => {
                            let d = (2..=n).find(|d| n % d == 0).unwrap_or(1);
                            vec![d as i64, -1]
                        }
                    };
                    let dims: Vec<usize> = spec.iter().map(|&d| if d < 0 { 0 } else { d as usize }).collect();
                    let known: usize = dims.iter().filter(|&&d| d > 0).product();
                    let dims: Vec<usize> = dims.iter().map(|&d| if d == 0 { n / known } else { d }).collect();
                    let want = ArrayD::from_shape_vec(IxDyn(&dims), x.iter().copied().collect()).unwrap();
                    (a.reshape(&spec).unwrap(), want)
                }
                Manip::Permute(r) => {
                    let mut perm: Vec<usize> = (0..nd).collect();
                    let mut r = r;
                    for i in (1..nd).rev() {
                        perm.swap(i, (r % (i as u64 + 1)) as usize);
                        r /= i as u64 + 1;
                    }
                    (a.permute(&perm).unwrap(), x.clone().permuted_axes(IxDyn(&perm)))
                }
                Manip::Concat(axis, c) => {
                    let axis = axis % nd;
                    // The second operand: another length along the axis, chunked its own way.
                    let mut yshape = shape.clone();
                    yshape[axis] = c;
                    let y = values(&yshape, dt, seed ^ 7);
                    let ychunks: Vec<usize> = yshape.iter().map(|&d| d.div_ceil(2)).collect();
                    let b = tensor(&y, dt, &ychunks);
                    let want = ndarray::concatenate(Axis(axis), &[x.view(), y.view()]).unwrap();
                    (ares_tensor::concatenate(&[a.clone(), b], axis).unwrap(), want)
                }
                Manip::Stack(axis) => {
                    let axis = axis % (nd + 1);
                    let y = values(&shape, dt, seed ^ 3);
                    let b = tensor(&y, dt, &chunks);
                    let want = ndarray::stack(Axis(axis), &[x.view(), y.view()]).unwrap();
                    (ares_tensor::stack(&[a.clone(), b], axis).unwrap(), want)
                }
                Manip::Mask => {
                    let keep = a.gt(&ares_tensor::scalar(ares_tensor::Scalar::F64(0.0))).unwrap();
                    let v: Vec<f64> = x.iter().copied().filter(|&v| v > 0.0).collect();
                    let n = v.len();
                    (a.mask(&keep).unwrap(), ArrayD::from_shape_vec(IxDyn(&[n]), v).unwrap())
                }
                Manip::Arg(max, axis) => {
                    let op = if max { ReduceOp::ArgMax } else { ReduceOp::ArgMin };
                    let better = |v: f64, b: f64| if max { v > b } else { v < b };
                    let first = |l: ndarray::ArrayViewD<f64>| {
                        let mut k = 0;
                        for (i, &v) in l.iter().enumerate() {
                            if better(v, l.iter().nth(k).copied().unwrap()) {
                                k = i;
                            }
                        }
                        k as f64
                    };
                    match axis {
                        Some(ax) if ax < nd => {
                            let want = x.map_axis(Axis(ax), |l| first(l.into_dyn()));
                            (a.reduce(op, Some(&[ax]), false).unwrap(), want)
                        }
                        _ => {
                            let want = ArrayD::from_elem(IxDyn(&[]), first(x.view()));
                            (a.reduce(op, None, false).unwrap(), want)
                        }
                    }
                }
            };
            let got = got.fetch::<f64>(&s).unwrap();
            prop_assert_eq!(got, want, "{:?} of {:?} in {:?} ({:?})", m, shape, chunks, dt);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

/// An element-wise operation or a reduction not covered above.
#[derive(Clone, Copy, Debug)]
enum Other {
    Neg,
    Abs,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Not,
    Where,
    Clip,
    Div,
    Pow,
    Var,
    Std,
    Any,
    All,
}

fn other() -> impl Strategy<Value = Other> {
    use Other::*;
    prop::sample::select(vec![Neg, Abs, Sqrt, Exp, Log, Sin, Cos, Not, Where, Clip, Div, Pow, Var, Std, Any, All])
}

#[test]
fn unary_where_clip_division_and_statistics_match_the_oracle_in_every_dtype() {
    use ares_tensor::{Scalar, scalar, where_};
    cluster();
    let s = Session::new();
    let strategy = (shape_and_chunks(), dtype(), other(), any::<u64>(), prop::option::of(0usize..3));
    let mut runner = TestRunner::new(Config { cases: 96, ..Config::default() });
    runner
        .run(&strategy, |((shape, chunks), dt, op, seed, axis)| {
            let x = values(&shape, dt, seed);
            // No zero divisors (for bool: all true, as bool tensors hold 0 or 1).
            let y = values(&shape, dt, seed ^ 5).mapv(|v| {
                if v != 0.0 {
                    v
                } else if dt == DType::Bool {
                    1.0
                } else {
                    3.0
                }
            });
            let (a, b) = (tensor(&x, dt, &chunks), tensor(&y, dt, &chunks));
            let float = |d: DType| if d == DType::F32 { DType::F32 } else { DType::F64 };
            let map = |f: fn(f64) -> f64| x.mapv(f);
            let axis = axis.filter(|&ax| ax < shape.len());
            let reduce = |f: &dyn Fn(&[f64]) -> f64| -> ArrayD<f64> {
                match axis {
                    Some(ax) => x.map_axis(Axis(ax), |l| f(&l.to_vec())),
                    None => ArrayD::from_elem(IxDyn(&[]), f(&x.iter().copied().collect::<Vec<_>>())),
                }
            };
            let var = |v: &[f64]| {
                let m = v.iter().sum::<f64>() / v.len() as f64;
                v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64
            };
            let axes: Option<Vec<usize>> = axis.map(|ax| vec![ax]);
            let red = |o: ReduceOp| a.reduce(o, axes.as_deref(), false).unwrap();
            let (got, want, want_dtype): (Tensor, ArrayD<f64>, DType) = match op {
                Other::Neg if dt == DType::Bool => {
                    prop_assert!(a.negate().is_err(), "numpy refuses -bool");
                    return Ok(());
                }
                Other::Neg => (a.negate().unwrap(), map(|v| -v), dt),
                Other::Abs => (a.abs(), map(f64::abs), dt),
                Other::Sqrt => (a.sqrt(), map(f64::sqrt), float(dt)),
                Other::Exp => (a.exp(), map(f64::exp), float(dt)),
                Other::Log => (a.log(), map(f64::ln), float(dt)),
                Other::Sin => (a.sin(), map(f64::sin), float(dt)),
                Other::Cos => (a.cos(), map(f64::cos), float(dt)),
                Other::Not => (a.not(), map(|v| if v == 0.0 { 1.0 } else { 0.0 }), DType::Bool),
                Other::Where => {
                    let c = a.gt(&scalar(Scalar::I64(0))).unwrap();
                    let want = ndarray::Zip::from(&x).and(&y).map_collect(|&p, &q| if p > 0.0 { p } else { q });
                    (where_(&c, &a, &b).unwrap(), want, dt)
                }
                Other::Clip => {
                    let d = if dt.is_float() { dt } else { DType::F64 };
                    (a.clip(-1.5, 2.0), map(|v| v.clamp(-1.5, 2.0)), d)
                }
                Other::Div => {
                    let want = ndarray::Zip::from(&x).and(&y).map_collect(|&p, &q| p / q);
                    (a.binary(BinOp::Div, &b).unwrap(), want, DType::true_div(dt, dt))
                }
                Other::Pow if !dt.is_float() => return Ok(()), // numpy refuses negative integer powers
                Other::Pow => {
                    let want = ndarray::Zip::from(&x).and(&y).map_collect(|&p, &q| p.powf(q));
                    (a.pow(&b).unwrap(), want, dt)
                }
                Other::Var => (red(ReduceOp::Var), reduce(&var), float(dt)),
                Other::Std => (red(ReduceOp::Std), reduce(&|v| var(v).sqrt()), float(dt)),
                Other::Any => (red(ReduceOp::Any), reduce(&|v| v.iter().any(|&x| x != 0.0) as u8 as f64), DType::Bool),
                Other::All => (red(ReduceOp::All), reduce(&|v| v.iter().all(|&x| x != 0.0) as u8 as f64), DType::Bool),
            };
            prop_assert_eq!(got.dtype(), want_dtype, "{:?} of {:?}", op, dt);
            let got = got.fetch::<f64>(&s).unwrap();
            prop_assert_eq!(got.shape(), want.shape());
            let tol = if want_dtype == DType::F32 { 1e-5 } else { 1e-12 };
            for (g, w) in got.iter().zip(want.iter()) {
                let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * (1.0 + w.abs());
                prop_assert!(ok, "{} vs {} ({:?} of {:?}, axis {:?})", g, w, op, dt, axis);
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn blocked_products_match_the_oracle_for_any_chunking() {
    cluster();
    let s = Session::new();
    // A shared dimension of up to 12 chunks: longer than one GEMM task sums (8), so
    // chains through an accumulator are covered too.
    let dims = (1usize..9, 1usize..13, 1usize..9);
    let strategy = (dims, (1usize..9, 1usize..9, 1usize..9), any::<u64>(), any::<bool>(), any::<bool>());
    let mut runner = TestRunner::new(Config { cases: 48, ..Config::default() });
    runner
        .run(&strategy, |((m, k, n), (cm, ck, cn), seed, single, gram)| {
            let dt = if single { DType::F32 } else { DType::F64 };
            let x = values(&[m, k], dt, seed);
            let a = tensor(&x, dt, &[cm.min(m), ck.min(k)]);
            let x2 = x.view().into_dimensionality::<ndarray::Ix2>().unwrap().to_owned();
            let (got, want) = if gram {
                // a · aᵀ: upper blocks computed, lower ones read transposed.
                (a.matmul(&a.t().unwrap()).unwrap(), x2.dot(&x2.t()))
            } else {
                let y = values(&[k, n], dt, seed ^ 9);
                let b = tensor(&y, dt, &[ck.min(k), cn.min(n)]);
                (a.matmul(&b).unwrap(), x2.dot(&y.view().into_dimensionality::<ndarray::Ix2>().unwrap()))
            };
            prop_assert_eq!(got.dtype(), dt);
            // Small integers: every product is exact in float32 too.
            prop_assert_eq!(got.fetch::<f64>(&s).unwrap(), want.into_dyn());
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn creation_operations_match_the_oracle_for_any_chunking() {
    use ares_tensor::{Scalar, arange, eye, full, linspace, random};
    cluster();
    let s = Session::new();
    let strategy = (shape_and_chunks(), 0usize..6, any::<u64>(), -5i64..5);
    let mut runner = TestRunner::new(Config { cases: 64, ..Config::default() });
    runner
        .run(&strategy, |((shape, chunks), which, seed, v)| {
            let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
            let n = shape[0];
            let (got, want): (Tensor, ArrayD<f64>) = match which {
                0 => (full(&dims, Scalar::I64(v), &chunks).unwrap(), ArrayD::from_elem(IxDyn(&shape), v as f64)),
                1 => {
                    let want = ArrayD::from_shape_fn(IxDyn(&[n]), |i| v as f64 + 0.5 * i[0] as f64);
                    (arange(v as f64, v as f64 + 0.5 * n as f64, 0.5, chunks[0]).unwrap(), want)
                }
                2 => {
                    let step = if n > 1 { 3.0 / (n - 1) as f64 } else { 0.0 };
                    let want = ArrayD::from_shape_fn(IxDyn(&[n]), |i| v as f64 + step * i[0] as f64);
                    (linspace(v as f64, v as f64 + 3.0, n as u64, chunks[0]).unwrap(), want)
                }
                3 => {
                    let want = ArrayD::from_shape_fn(IxDyn(&[n, n]), |i| if i[0] == i[1] { 1.0 } else { 0.0 });
                    (eye(n as u64, chunks[0]).unwrap(), want)
                }
                _ => {
                    // Random tensors: the same seed gives the same values whatever the
                    // chunking, within the distribution's range.
                    let t = if which == 4 {
                        random::uniform(-2.0, 3.0, &dims, &chunks, seed).unwrap()
                    } else {
                        random::randint(-3, 4, &dims, &chunks, seed).unwrap()
                    };
                    let whole: Vec<usize> = shape.clone();
                    let same = if which == 4 {
                        random::uniform(-2.0, 3.0, &dims, &whole, seed).unwrap()
                    } else {
                        random::randint(-3, 4, &dims, &whole, seed).unwrap()
                    };
                    let want = same.fetch::<f64>(&s).unwrap();
                    let (lo, hi) = if which == 4 { (-2.0, 3.0) } else { (-3.0, 3.0) };
                    prop_assert!(want.iter().all(|&x| x >= lo && x <= hi), "out of range");
                    (t, want)
                }
            };
            let got = got.fetch::<f64>(&s).unwrap();
            prop_assert_eq!(got.shape(), want.shape());
            for (g, w) in got.iter().zip(want.iter()) {
                prop_assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{} vs {} (case {})", g, w, which);
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}
