//! Running sums and products (`cumsum`, `cumprod`) on a real embedded cluster, against a
//! sequential oracle computed here: every axis, uneven chunkings, integers that wrap,
//! narrower dtypes widened as numpy widens them, and a scan fed by a mask's result.

use ares_tensor::kernel::ScanOp;
use ares_tensor::{DType, Session, Tensor, TensorError, from_array};
use ndarray::{ArrayD, Axis, IxDyn};

/// The running `op` along `axis`, one sequential pass per lane (numpy's order).
fn oracle(a: &ArrayD<i64>, axis: usize, op: ScanOp) -> ArrayD<i64> {
    let mut out = a.clone();
    for mut lane in out.lanes_mut(Axis(axis)) {
        for k in 1..lane.len() {
            lane[k] = match op {
                ScanOp::Sum => lane[k - 1].wrapping_add(lane[k]),
                ScanOp::Prod => lane[k - 1].wrapping_mul(lane[k]),
            };
        }
    }
    out
}

#[test]
fn running_sums_and_products_match_a_sequential_pass_on_every_axis_and_chunking() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let shape = [7usize, 5, 6];
    let n: usize = shape.iter().product();
    // Values that overflow int64 in products: the wrap must be numpy's.
    let v: Vec<i64> =
        (0..n as i64).map(|i| (i * 7919) % 23 - 11 + if i % 13 == 0 { i64::MAX / 3 } else { 0 }).collect();
    let a = ArrayD::from_shape_vec(IxDyn(&shape), v).unwrap();
    for chunks in [[7, 5, 6], [2, 3, 4], [3, 1, 5], [1, 5, 1]] {
        let x = from_array(&a, &chunks).unwrap();
        for axis in 0..3 {
            for op in [ScanOp::Sum, ScanOp::Prod] {
                let y = x.cumulative(op, axis).unwrap();
                assert_eq!(y.dtype(), DType::I64);
                assert_eq!(y.chunks(), x.chunks(), "a scan keeps the chunks");
                assert_eq!(y.fetch::<i64>(&s).unwrap(), oracle(&a, axis, op), "{op:?} along {axis}, chunks {chunks:?}");
            }
        }
    }
}

#[test]
fn narrow_dtypes_accumulate_as_numpy_and_floats_stay_close() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let b = ArrayD::from_shape_vec(IxDyn(&[10]), (0..10).map(|i| i % 3 == 0).collect()).unwrap();
    let y = from_array(&b, &[3]).unwrap().cumulative(ScanOp::Sum, 0).unwrap();
    assert_eq!(y.dtype(), DType::I64, "booleans count in int64");
    assert_eq!(y.fetch::<i64>(&s).unwrap().iter().copied().collect::<Vec<_>>(), [1, 1, 1, 2, 2, 2, 3, 3, 3, 4]);
    let u = ArrayD::from_shape_vec(IxDyn(&[6]), vec![250u8, 10, 1, 2, 3, 4]).unwrap();
    let y = from_array(&u, &[4]).unwrap().cumulative(ScanOp::Sum, 0).unwrap();
    assert_eq!(y.dtype(), DType::U64, "uint8 sums in uint64, without wrapping at 256");
    assert_eq!(y.fetch::<u64>(&s).unwrap().iter().copied().collect::<Vec<_>>(), [250, 260, 261, 263, 266, 270]);
    let f: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin()).collect();
    let fa = ArrayD::from_shape_vec(IxDyn(&[1000]), f.clone()).unwrap();
    let got = from_array(&fa, &[77]).unwrap().cumulative(ScanOp::Sum, 0).unwrap().fetch::<f64>(&s).unwrap();
    let mut run = 0.0;
    for (g, w) in got.iter().zip(&f) {
        run += w;
        assert!((g - run).abs() <= 1e-12 * (1.0 + run.abs()), "{g} vs {run}");
    }
}

#[test]
fn a_scan_of_a_masked_result_and_a_bad_axis() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a = ArrayD::from_shape_vec(IxDyn(&[12]), (0..12i64).collect()).unwrap();
    let x = from_array(&a, &[5]).unwrap();
    let picked = x.mask(&x.gt_scalar(3.5)).unwrap();
    let y = picked.cumulative(ScanOp::Sum, 0).unwrap();
    let want: Vec<i64> = (4..12)
        .scan(0, |acc, v| {
            *acc += v;
            Some(*acc)
        })
        .collect();
    assert_eq!(y.fetch::<i64>(&s).unwrap().iter().copied().collect::<Vec<_>>(), want);
    assert!(matches!(x.cumulative(ScanOp::Sum, 1), Err(TensorError::BadAxis { axis: 1, ndim: 1 })));
    let empty = from_array(&ArrayD::<f64>::zeros(IxDyn(&[0, 3])), &[1, 2]).unwrap();
    let e: Tensor = empty.cumulative(ScanOp::Prod, 0).unwrap();
    assert_eq!(e.fetch::<f64>(&s).unwrap().shape(), &[0, 3]);
}
