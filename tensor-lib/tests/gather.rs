//! `take` and `take_along_axis` on a real embedded cluster against oracles computed
//! here: every axis, positions chunked and not, negative positions, a sorted source whose
//! chunk lengths are known only once it ran, and out-of-bounds positions.

use ares_tensor::{Session, Tensor, TensorError, from_array};
use ndarray::{ArrayD, Axis, IxDyn};

fn ints(shape: &[usize], v: Vec<i64>, chunks: &[usize]) -> Tensor {
    from_array(&ArrayD::from_shape_vec(IxDyn(shape), v).unwrap(), chunks).unwrap()
}

#[test]
fn take_along_every_axis_matches_select() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a = ArrayD::from_shape_vec(IxDyn(&[5, 6, 4]), (0..120).map(|v| v as f64 * 1.5).collect()).unwrap();
    for chunks in [[5, 6, 4], [2, 4, 3], [1, 1, 4]] {
        let x = from_array(&a, &chunks).unwrap();
        for axis in 0..3 {
            let n = a.shape()[axis] as i64;
            let pos: Vec<i64> = vec![0, n - 1, 2, -1, 1, -n, 1];
            let idx = ints(&[7], pos.clone(), &[3]);
            let got = x.take(&idx, axis).unwrap();
            let mut want_shape = a.shape().to_vec();
            want_shape[axis] = 7;
            assert_eq!(got.shape(), want_shape.iter().map(|&d| d as u64).collect::<Vec<_>>());
            let norm: Vec<usize> = pos.iter().map(|&p| if p < 0 { (p + n) as usize } else { p as usize }).collect();
            assert_eq!(got.fetch::<f64>(&s).unwrap(), a.select(Axis(axis), &norm), "chunks {chunks:?} axis {axis}");
        }
    }
    // Positions of two dimensions put their shape in place of the axis.
    let x = from_array(&a, &[2, 4, 3]).unwrap();
    let idx = ints(&[2, 2], vec![3, 0, 5, 1], &[1, 2]);
    let got = x.take(&idx, 1).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(got.shape(), &[5, 2, 2, 4]);
    assert_eq!(got[[4, 1, 0, 2]], a[[4, 5, 2]]);
}

#[test]
fn take_along_axis_reorders_each_lane() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v: Vec<f64> = (0..48).map(|i| ((i * 37) % 48) as f64).collect();
    let a = ArrayD::from_shape_vec(IxDyn(&[6, 8]), v).unwrap();
    let x = from_array(&a, &[4, 3]).unwrap();
    for axis in 0..2 {
        let order = x.argsort(axis, false).unwrap();
        let got = x.take_along(&order, axis).unwrap().fetch::<f64>(&s).unwrap();
        let want = x.sort(axis, false).unwrap().fetch::<f64>(&s).unwrap();
        assert_eq!(got, want, "axis {axis}");
    }
    // A vector in several chunks sorts by sample sort: its order's chunk lengths are
    // known only once it ran.
    let v = from_array(
        &ArrayD::from_shape_vec(IxDyn(&[40]), (0..40).map(|i| ((i * 17) % 40) as f64).collect()).unwrap(),
        &[6],
    )
    .unwrap();
    let order = v.argsort(0, false).unwrap();
    let got = v.take_along(&order, 0).unwrap().fetch::<f64>(&s).unwrap();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), (0..40).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn a_sorted_source_and_bad_positions() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let x = ints(&[50], (0..50).rev().collect(), &[7]);
    let sorted = x.sort(0, false).unwrap();
    let got = sorted.take(&ints(&[3], vec![0, 25, 49], &[2]), 0).unwrap().fetch::<i64>(&s).unwrap();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), [0, 25, 49]);
    let err = x.take(&ints(&[2], vec![1, 50], &[2]), 0).unwrap().fetch::<i64>(&s).unwrap_err();
    assert!(err.to_string().contains("index 50 is out of bounds for axis 0 with size 50"), "{err}");
    let floats = from_array(&ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.0, 1.0]).unwrap(), &[2]).unwrap();
    assert!(matches!(x.take(&floats, 0), Err(TensorError::BadDType { .. })));
    assert!(matches!(x.take(&x, 1), Err(TensorError::BadAxis { .. })));
}
