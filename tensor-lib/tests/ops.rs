//! Tensor operations against direct ndarray computations, on a real embedded cluster
//! (worker processes run the chunk tasks). Shapes use uneven last chunks and chunk size 1.

use std::sync::{Mutex, MutexGuard};

use ares_tensor::{DType, ReduceOp, Scalar, Session, Slice, Tensor, TensorError, from_array, random};
use ndarray::{ArrayD, Axis, IxDyn};

static SERIAL: Mutex<()> = Mutex::new(());

struct Cluster(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Cluster {
    fn start() -> Self {
        let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        ares::init_with(ares::Config::default().num_cpus(2)).expect("init");
        Cluster(g)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        ares::shutdown();
    }
}

/// Deterministic test data (not the tensor RNG, so the oracle is independent of it).
fn data(shape: &[usize], salt: u64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n as u64)
        .map(|i| {
            let x = (i.wrapping_mul(2654435761).wrapping_add(salt * 97)) % 1000;
            x as f64 / 100.0 - 4.0
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

fn close(a: &ArrayD<f64>, b: &ArrayD<f64>) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b.iter()) {
        let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()));
        assert!(ok, "{x} != {y}\n{a:?}\n{b:?}");
    }
}

#[test]
fn elementwise_chains_match_ndarray_on_uneven_chunks() {
    let _c = Cluster::start();
    let s = Session::new();
    for chunks in [[3usize, 2], [1, 1], [7, 5], [4, 3]] {
        let (x, y) = (data(&[7, 5], 1), data(&[7, 5], 2).mapv(|v| v + 10.0));
        let (a, b) = (from_array(&x, &chunks).unwrap(), from_array(&y, &chunks).unwrap());
        let t = ((&a + &b) * 2.0 - &a / &b).abs().sqrt() + a.sin() * b.cos() - (&a * 0.1).exp();
        let want = ((&x + &y) * 2.0 - &x / &y).mapv(f64::abs).mapv(f64::sqrt) + x.mapv(f64::sin) * y.mapv(f64::cos)
            - (&x * 0.1).mapv(f64::exp);
        close(&t.fetch::<f64>(&s).unwrap(), &want);
        let lg = y.mapv(f64::ln);
        close(&b.log().fetch::<f64>(&s).unwrap(), &lg);
        let clipped = x.mapv(|v| v.clamp(-1.0, 2.0));
        close(&a.clip(-1.0, 2.0).fetch::<f64>(&s).unwrap(), &clipped);
    }
}

#[test]
fn broadcasting_and_promotion_follow_numpy() {
    let _c = Cluster::start();
    let s = Session::new();
    let x = data(&[6, 4], 3);
    let row = data(&[4], 4);
    let col = data(&[6, 1], 5);
    let a = from_array(&x, &[4, 3]).unwrap();
    let r = from_array(&row, &[3]).unwrap();
    let c = from_array(&col, &[4, 1]).unwrap();
    close(&(&a + &r).fetch::<f64>(&s).unwrap(), &(&x + &row));
    close(&(&a * &c).fetch::<f64>(&s).unwrap(), &(&x * &col));
    close(&(&r - &c).fetch::<f64>(&s).unwrap(), &(&row - &col));
    let bad = from_array(&data(&[5], 1), &[3]).unwrap();
    assert!(matches!(a.binary(ares_tensor::kernel::BinOp::Add, &bad), Err(TensorError::ShapeMismatch { .. })));
    // Differently chunked operands are rechunked alike (the cheaper side follows).
    let other_chunks = from_array(&x, &[3, 3]).unwrap();
    close(&(&a + &other_chunks).fetch::<f64>(&s).unwrap(), &(&x + &x));

    let i = from_array(&x.mapv(|v| v as i32), &[4, 3]).unwrap();
    let f = from_array(&x.mapv(|v| v as f32), &[4, 3]).unwrap();
    assert_eq!((&i + &f).dtype(), DType::F64, "int32 + float32 is float64 in numpy");
    assert_eq!((&f + &f).dtype(), DType::F32);
    assert_eq!((&i / &i).dtype(), DType::F64);
    assert_eq!(a.lt(&a).unwrap().dtype(), DType::Bool);
    let mask = a.gt_scalar(0.0);
    assert_eq!(mask.sum().dtype(), DType::I64);
    let positives = x.iter().filter(|v| **v > 0.0).count() as i64;
    assert_eq!(mask.sum().fetch::<i64>(&s).unwrap().into_raw_vec_and_offset().0, vec![positives]);
    let w = ares_tensor::where_(&mask, &a, &ares_tensor::scalar(Scalar::F64(-1.0))).unwrap();
    close(&w.fetch::<f64>(&s).unwrap(), &x.mapv(|v| if v > 0.0 { v } else { -1.0 }));
}

fn oracle(x: &ArrayD<f64>, op: ReduceOp, axes: &[usize], keepdims: bool) -> ArrayD<f64> {
    let mut r = x.clone();
    for &ax in axes.iter().rev() {
        r = match op {
            ReduceOp::Sum => r.sum_axis(Axis(ax)),
            ReduceOp::Prod => r.map_axis(Axis(ax), |l| l.iter().product()),
            ReduceOp::Min => r.map_axis(Axis(ax), |l| l.iter().copied().fold(f64::INFINITY, f64::min)),
            ReduceOp::Max => r.map_axis(Axis(ax), |l| l.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            _ => unreachable!(),
        };
        if keepdims {
            r = r.insert_axis(Axis(ax));
        }
    }
    r
}

#[test]
fn reductions_over_any_axes_match_ndarray() {
    let _c = Cluster::start();
    let s = Session::new();
    let x = data(&[7, 5, 3], 7).mapv(|v| v / 4.0);
    for chunks in [[3usize, 2, 3], [1, 5, 1], [7, 5, 3]] {
        let a = from_array(&x, &chunks).unwrap();
        for axes in [vec![0], vec![1], vec![2], vec![0, 2], vec![0, 1, 2]] {
            for keepdims in [false, true] {
                for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max] {
                    let got = a.reduce(op, Some(&axes), keepdims).unwrap().fetch::<f64>(&s).unwrap();
                    close(&got, &oracle(&x, op, &axes, keepdims));
                }
                let n: usize = axes.iter().map(|&d| x.shape()[d]).product();
                let mean = oracle(&x, ReduceOp::Sum, &axes, keepdims) / n as f64;
                close(&a.reduce(ReduceOp::Mean, Some(&axes), keepdims).unwrap().fetch::<f64>(&s).unwrap(), &mean);
            }
        }
        // var/std over everything against the two-pass formula.
        let m = x.mean().unwrap();
        let var = x.mapv(|v| (v - m) * (v - m)).mean().unwrap();
        let got = s.scalar(&a.var()).unwrap();
        assert!((got - var).abs() < 1e-9, "{got} vs {var}");
        assert!((s.scalar(&a.std()).unwrap() - var.sqrt()).abs() < 1e-9);
        let any = a.gt_scalar(3.9).reduce(ReduceOp::Any, None, false).unwrap();
        assert_eq!(s.scalar(&any).unwrap(), if x.iter().any(|v| *v > 3.9) { 1.0 } else { 0.0 });
        let all = a.gt_scalar(-10.0).reduce(ReduceOp::All, None, false).unwrap();
        assert_eq!(s.scalar(&all).unwrap(), 1.0);
    }
    assert!(matches!(
        from_array(&x, &[3, 2, 3]).unwrap().reduce(ReduceOp::Sum, Some(&[3]), false),
        Err(TensorError::BadAxis { axis: 3, ndim: 3 })
    ));
}

#[test]
fn random_tensors_are_reproducible_whatever_the_chunking() {
    let _c = Cluster::start();
    let s = Session::new();
    let a = random::uniform(-1.0, 1.0, &[50, 3], &[7, 2], 11).unwrap().fetch::<f64>(&s).unwrap();
    let b = random::uniform(-1.0, 1.0, &[50, 3], &[50, 3], 11).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(a, b);
    assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
    let c = random::uniform(-1.0, 1.0, &[50, 3], &[7, 2], 12).unwrap().fetch::<f64>(&s).unwrap();
    assert_ne!(a, c, "another seed, other numbers");
    let n = random::randn(&[20_000], &[3000], 5).unwrap();
    let mean = s.scalar(&n.mean()).unwrap();
    let std = s.scalar(&n.std()).unwrap();
    assert!(mean.abs() < 0.05 && (std - 1.0).abs() < 0.05, "mean {mean} std {std}");
    let ints = random::randint(3, 9, &[1000], &[128], 1).unwrap().fetch::<i64>(&s).unwrap();
    assert!(ints.iter().all(|v| (3..9).contains(v)));
    // Rejection samplers draw as many uniforms per element as they need: still one value
    // per (seed, element) whatever the chunking.
    let counts = |chunks: &[usize]| {
        let p = random::poisson(25.0, &[40, 30], chunks, 4).unwrap().fetch::<i64>(&s).unwrap();
        let b = random::binomial(500, 0.3, &[40, 30], chunks, 4).unwrap().fetch::<i64>(&s).unwrap();
        let g = random::standard_gamma(0.7, &[40, 30], chunks, 4).unwrap().fetch::<f64>(&s).unwrap();
        (p, b, g)
    };
    let (p, b, g) = counts(&[7, 11]);
    assert_eq!((p.clone(), b.clone(), g.clone()), counts(&[40, 30]));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let pm = mean(&p.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let bm = mean(&b.iter().map(|&v| v as f64).collect::<Vec<_>>());
    assert!((pm - 25.0).abs() < 1.0 && (bm - 150.0).abs() < 3.0 && (mean(g.as_slice().unwrap()) - 0.7).abs() < 0.15);
    // Parameters outside a distribution's domain are refused before anything runs.
    let bad = |r: ares_tensor::Result<Tensor>, want: &str| match r {
        Err(TensorError::BadParameter { reason, .. }) => assert!(reason.contains(want), "{reason}"),
        other => panic!("expected BadParameter({want}), got {other:?}"),
    };
    bad(random::poisson(f64::NAN, &[3], &[3], 1), "NaN");
    bad(random::poisson(1e300, &[3], &[3], 1), "too large");
    bad(random::binomial(-1, 0.5, &[3], &[3], 1), "n < 0");
    bad(random::binomial(5, 1.5, &[3], &[3], 1), "p > 1");
    bad(random::standard_gamma(-1.0, &[3], &[3], 1), "shape < 0");
    bad(random::negative_binomial(1.0, 1e-300, &[3], &[3], 1), "too small");
}

#[test]
fn fused_pipelines_match_their_materialized_inputs() {
    let _c = Cluster::start();
    let s = Session::new();
    // W2's shape: (a + 1) * 2, then sum.
    let a = random::rand(&[100_003], &[10_000], 3).unwrap();
    let x = a.fetch::<f64>(&s).unwrap();
    let got = s.scalar(&((&a + 1.0) * 2.0).sum()).unwrap();
    let want: f64 = x.iter().map(|v| (v + 1.0) * 2.0).sum();
    assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    // W1's shape: norm along axis 1 (inside each chunk), compared, counted.
    let p = random::uniform(-1.0, 1.0, &[20_001, 2], &[3000, 2], 9).unwrap();
    let pts = p.fetch::<f64>(&s).unwrap();
    let inside = p.norm(1).unwrap().lt_scalar(1.0).sum();
    let want = pts.outer_iter().filter(|r| (r[0] * r[0] + r[1] * r[1]).sqrt() < 1.0).count() as f64;
    assert_eq!(s.scalar(&inside).unwrap(), want);
}

#[test]
fn creation_operations() {
    let _c = Cluster::start();
    let s = Session::new();
    let r = ares_tensor::arange(2.0, 11.0, 1.5, 4).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(r.into_raw_vec_and_offset().0, vec![2.0, 3.5, 5.0, 6.5, 8.0, 9.5]);
    let l = ares_tensor::linspace(0.0, 1.0, 5, 2).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(l.into_raw_vec_and_offset().0, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    let e = ares_tensor::eye(5, 2).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(e, ArrayD::from_shape_fn(IxDyn(&[5, 5]), |i| if i[0] == i[1] { 1.0 } else { 0.0 }));
    let o: Tensor = ares_tensor::ones(&[3, 4], &[2, 2]).unwrap();
    assert_eq!(s.scalar(&o.sum()).unwrap(), 12.0);
    assert!(matches!(ares_tensor::zeros(&[3], &[0]), Err(TensorError::BadChunks { .. })));
}

#[test]
fn full_shape_constants_empty_axes_and_irregular_chunks_are_handled() {
    use ares_tensor::{Slice, concatenate, full, ones, zeros};
    let _c = Cluster::start();
    let s = Session::new();
    // A same-shape constant on the right (no broadcast node): ReLU, integer and bool ops.
    let x = data(&[4], 1);
    let a = from_array(&x, &[4]).unwrap();
    close(&a.maximum(&zeros(&[4], &[4]).unwrap()).unwrap().fetch::<f64>(&s).unwrap(), &x.mapv(|v| v.max(0.0)));
    let xi = ndarray::arr1(&[1i64, 2, 3, 4]).into_dyn();
    let ai = from_array(&xi, &[4]).unwrap();
    let plus = ai.binary(ares_tensor::kernel::BinOp::Add, &full(&[4], Scalar::I64(10), &[4]).unwrap()).unwrap();
    assert_eq!(plus.fetch::<i64>(&s).unwrap().into_raw_vec_and_offset().0, vec![11, 12, 13, 14]);
    let b = a.gt_scalar(0.0).and(&full(&[4], Scalar::Bool(true), &[4]).unwrap()).unwrap();
    assert_eq!(b.fetch::<bool>(&s).unwrap(), x.mapv(|v| v > 0.0));

    // Reductions over an empty axis: sum is 0, mean NaN; min has no identity.
    let empty = zeros(&[3, 0], &[3, 1]).unwrap();
    assert_eq!(
        empty.reduce(ReduceOp::Sum, Some(&[1]), false).unwrap().fetch::<f64>(&s).unwrap(),
        ndarray::arr1(&[0.0; 3]).into_dyn()
    );
    let mean = empty.reduce(ReduceOp::Mean, Some(&[1]), false).unwrap().fetch::<f64>(&s).unwrap();
    assert!(mean.iter().all(|v| v.is_nan()) && mean.len() == 3);
    assert!(matches!(empty.reduce(ReduceOp::Min, Some(&[1]), false), Err(TensorError::EmptyReduction { .. })));
    // A mask that selects nothing: its length is known only when it runs.
    let x = from_array(&data(&[5], 3), &[2]).unwrap();
    let none = x.mask(&x.gt_scalar(1e9)).unwrap();
    assert!(matches!(none.max().fetch::<f64>(&s), Err(TensorError::EmptyReduction { .. })));
    assert_eq!(none.sum().fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, vec![0.0]);

    // Concatenating onto irregular chunks (from a slice) rechunks the other operand to them.
    let m = data(&[6, 6], 2);
    let sa = from_array(&m, &[6, 3]).unwrap().slice(&[Slice::all(), Slice::range(1, 6)]).unwrap();
    assert_eq!(sa.chunks()[1], vec![2, 3]);
    let joined = concatenate(&[sa, ones(&[2, 5], &[2, 5]).unwrap()], 0).unwrap();
    let mut want = m.slice(ndarray::s![.., 1..6]).to_owned().into_dyn();
    want.append(Axis(0), ndarray::Array2::<f64>::ones((2, 5)).into_dyn().view()).unwrap();
    close(&joined.fetch::<f64>(&s).unwrap(), &want);

    // A mask over irregular row chunks is aligned to them.
    let rows = data(&[12, 3], 4);
    let sliced = from_array(&rows, &[5, 3]).unwrap().slice(&[Slice::new(Some(3), None, 1)]).unwrap();
    assert_eq!(sliced.chunks()[0], vec![2, 5, 2]);
    let keep = from_array(&rows.slice(ndarray::s![3.., ..]).to_owned().into_dyn(), &[4, 3]).unwrap().gt_scalar(0.0);
    let picked = sliced.mask(&keep).unwrap().fetch::<f64>(&s).unwrap();
    let want: Vec<f64> = rows.slice(ndarray::s![3.., ..]).iter().copied().filter(|&v| v > 0.0).collect();
    assert_eq!(picked.into_raw_vec_and_offset().0, want);

    assert!(matches!(ares_tensor::arange(0.0, 5.0, 0.0, 2), Err(TensorError::BadIndex { .. })));
}

#[test]
fn differently_chunked_operands_are_rechunked_alike() {
    let _c = Cluster::start();
    let s = Session::new();
    let x = data(&[23], 7);
    let t = from_array(&x, &[5]).unwrap();
    let n = 23i64;
    // x[1:] - x[:-1]: chunks [4, 5, 5, 5, 3] against [5, 5, 5, 5, 2].
    let d = t.slice(&[Slice::range(1, n)]).unwrap() - t.slice(&[Slice::range(0, n - 1)]).unwrap();
    let want = ndarray::Zip::from(x.slice(ndarray::s![1..])).and(x.slice(ndarray::s![..-1])).map_collect(|a, b| a - b);
    close(&d.fetch::<f64>(&s).unwrap(), &want.into_dyn());
    // A reversed view plus the original.
    let r = t.slice(&[Slice::new(None, None, -1)]).unwrap() + &t;
    let want: Vec<f64> = (0..23).map(|i| x[[22 - i]] + x[[i]]).collect();
    assert_eq!(r.fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, want);
    // Two masks' results, chunked differently, combined once their lengths are known.
    let u = from_array(&x, &[3]).unwrap();
    let m = t.mask(&t.gt_scalar(0.0)).unwrap() * u.mask(&u.gt_scalar(0.0)).unwrap();
    let want: f64 = x.iter().filter(|v| **v > 0.0).map(|v| v * v).sum();
    assert!((s.scalar(&m.sum()).unwrap() - want).abs() < 1e-9 * want.abs().max(1.0));
    // where() with three operands chunked three ways.
    let c = from_array(&x.mapv(|v| v > 0.0), &[4]).unwrap();
    let w = ares_tensor::where_(&c, &t, &u.negate().unwrap()).unwrap();
    let want: Vec<f64> = x.iter().map(|&v| if v > 0.0 { v } else { -v }).collect();
    assert_eq!(w.fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, want);
}
