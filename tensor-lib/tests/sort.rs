//! Sorting, `unique` and `searchsorted` on a real embedded cluster against oracles
//! computed here: a stable sort in numpy's order (NaN last), one chunk and many (the
//! sample sort), ascending and descending, duplicates, NaN, 2-d tensors along a chunked
//! axis, a mask's result, and empty tensors.

use std::cmp::Ordering;

use ares_tensor::{DType, Session, Tensor, TensorError, from_array};
use ndarray::{ArrayD, Axis, IxDyn};

fn order(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// The stable argsort of `v` in numpy's order (largest first when `descending`).
fn oracle_argsort(v: &[f64], descending: bool) -> Vec<i64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| if descending { order(v[b], v[a]) } else { order(v[a], v[b]) });
    idx.into_iter().map(|i| i as i64).collect()
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    // Duplicates (few distinct values), a NaN every 37, signed zeros.
    (0..n as u64)
        .map(|i| {
            let h = (i.wrapping_mul(6364136223846793005).wrapping_add(seed)) >> 33;
            if i % 37 == 5 {
                f64::NAN
            } else if i % 11 == 3 {
                -0.0
            } else {
                (h % 50) as f64 - 25.0
            }
        })
        .collect()
}

fn vec1(t: &Tensor, s: &Session) -> Vec<f64> {
    t.fetch::<f64>(s).unwrap().iter().copied().collect()
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

#[test]
fn sorts_and_argsorts_match_a_stable_oracle_in_one_chunk_and_many() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    for (n, chunk) in [(1000, 1000), (1000, 97), (1001, 250), (40, 3), (7, 1)] {
        let v = values(n, n as u64);
        let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[n]), v.clone()).unwrap(), &[chunk]).unwrap();
        for descending in [false, true] {
            let want = oracle_argsort(&v, descending);
            let arg = x.argsort(0, descending).unwrap();
            assert_eq!(arg.dtype(), DType::I64);
            let got: Vec<i64> = arg.fetch::<i64>(&s).unwrap().iter().copied().collect();
            assert_eq!(got, want, "argsort n={n} chunk={chunk} descending={descending}");
            let sorted = x.sort(0, descending).unwrap();
            assert_eq!(sorted.shape(), &[n as u64], "the shape is known before running");
            let want_v: Vec<f64> = want.iter().map(|&i| v[i as usize]).collect();
            assert!(same(&vec1(&sorted, &s), &want_v), "sort n={n} chunk={chunk} descending={descending}");
        }
    }
}

#[test]
fn a_sorted_chunked_vector_feeds_later_operations() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v: Vec<f64> = (0..500).map(|i| ((i * 7919) % 500) as f64).collect();
    let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[500]), v).unwrap(), &[64]).unwrap();
    let sorted = x.sort(0, false).unwrap();
    // Element-wise with a regularly chunked tensor, then a reduction.
    let r = from_array(&ArrayD::from_shape_vec(IxDyn(&[500]), (0..500).map(|i| i as f64).collect()).unwrap(), &[100])
        .unwrap();
    let diff = sorted.binary(ares_tensor::kernel::BinOp::Sub, &r).unwrap();
    assert_eq!(vec1(&diff.sum(), &s), [0.0], "sorted 0..500 minus 0..500");
    // Slices of it (an order statistic, every tenth element backwards).
    use ares_tensor::Slice;
    assert_eq!(vec1(&sorted.slice(&[Slice::range(137, 138)]).unwrap(), &s), [137.0]);
    let every = sorted.slice(&[Slice::new(None, None, -10)]).unwrap();
    let want: Vec<f64> = (0..50).map(|k| (499 - 10 * k) as f64).collect();
    assert_eq!(vec1(&every, &s), want);
}

#[test]
fn two_d_tensors_sort_along_either_axis_chunked_or_not() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v = values(12 * 9, 3);
    let a = ArrayD::from_shape_vec(IxDyn(&[12, 9]), v).unwrap();
    for chunks in [[12, 9], [5, 4], [3, 9], [12, 2]] {
        let x = from_array(&a, &chunks).unwrap();
        for axis in 0..2 {
            let got = x.argsort(axis, false).unwrap().fetch::<i64>(&s).unwrap();
            let sorted = x.sort(axis, false).unwrap().fetch::<f64>(&s).unwrap();
            for (k, lane) in a.lanes(Axis(axis)).into_iter().enumerate() {
                let lv: Vec<f64> = lane.iter().copied().collect();
                let want = oracle_argsort(&lv, false);
                let got_lane: Vec<i64> = got.lanes(Axis(axis)).into_iter().nth(k).unwrap().iter().copied().collect();
                assert_eq!(got_lane, want, "chunks {chunks:?} axis {axis} lane {k}");
                let sorted_lane: Vec<f64> =
                    sorted.lanes(Axis(axis)).into_iter().nth(k).unwrap().iter().copied().collect();
                let want_v: Vec<f64> = want.iter().map(|&i| lv[i as usize]).collect();
                assert!(same(&sorted_lane, &want_v));
            }
        }
    }
}

#[test]
fn unique_values_and_counts_with_nan_equal_or_not() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v = values(2000, 11);
    let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[2000]), v.clone()).unwrap(), &[150]).unwrap();
    let mut sorted = v.clone();
    sorted.sort_by(|a, b| order(*a, *b));
    let mut want_v: Vec<f64> = Vec::new();
    let mut want_c: Vec<i64> = Vec::new();
    for &e in &sorted {
        match want_v.last() {
            Some(&l) if l == e || (l.is_nan() && e.is_nan()) => *want_c.last_mut().unwrap() += 1,
            _ => {
                want_v.push(e);
                want_c.push(1);
            }
        }
    }
    assert!(same(&vec1(&x.unique(false, true).unwrap(), &s), &want_v));
    let counts: Vec<i64> = x.unique(true, true).unwrap().fetch::<i64>(&s).unwrap().iter().copied().collect();
    assert_eq!(counts, want_c);
    // Without equal_nan, each NaN is its own value.
    let nans = v.iter().filter(|e| e.is_nan()).count();
    assert_eq!(vec1(&x.unique(false, false).unwrap(), &s).len(), want_v.len() - 1 + nans);
}

#[test]
fn searchsorted_counts_across_chunks_on_both_sides() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a: Vec<f64> = vec![1.0, 2.0, 2.0, 2.0, 3.0, 5.0, 8.0, f64::NAN];
    let q: Vec<f64> = vec![0.0, 2.0, 2.5, 8.0, 9.0, f64::NAN, 1.0, 5.0, -1.0];
    let at = from_array(&ArrayD::from_shape_vec(IxDyn(&[8]), a.clone()).unwrap(), &[3]).unwrap();
    let qt = from_array(&ArrayD::from_shape_vec(IxDyn(&[3, 3]), q.clone()).unwrap(), &[2, 2]).unwrap();
    for right in [false, true] {
        let got = at.searchsorted(&qt, right).unwrap();
        assert_eq!(got.shape(), &[3, 3]);
        let got: Vec<i64> = got.fetch::<i64>(&s).unwrap().iter().copied().collect();
        let want: Vec<i64> = q
            .iter()
            .map(|&x| {
                a.partition_point(|&e| {
                    matches!(order(e, x), Ordering::Less) || (right && order(e, x) == Ordering::Equal)
                }) as i64
            })
            .collect();
        assert_eq!(got, want, "right={right}");
    }
    // In a sorted tensor made by the sample sort (chunk lengths known only once it ran).
    let v = values(300, 5);
    let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[300]), v.clone()).unwrap(), &[40]).unwrap();
    let idx = x.sort(0, false).unwrap().searchsorted(&x, false).unwrap();
    let mut sorted = v.clone();
    sorted.sort_by(|a, b| order(*a, *b));
    let want: Vec<i64> = v.iter().map(|&e| sorted.partition_point(|&z| order(z, e) == Ordering::Less) as i64).collect();
    assert_eq!(idx.fetch::<i64>(&s).unwrap().iter().copied().collect::<Vec<_>>(), want);
}

#[test]
fn a_masks_result_sorts_and_errors_are_typed() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v: Vec<f64> = (0..100).map(|i| ((i * 37) % 100) as f64).collect();
    let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[100]), v).unwrap(), &[30]).unwrap();
    let big = x.mask(&x.gt_scalar(49.5)).unwrap();
    let want: Vec<f64> = (50..100).map(|i| i as f64).collect();
    assert_eq!(vec1(&big.sort(0, false).unwrap(), &s), want);
    assert!(matches!(x.sort(1, false), Err(TensorError::BadAxis { axis: 1, ndim: 1 })));
    let empty = from_array(&ArrayD::<f64>::zeros(IxDyn(&[0])), &[1]).unwrap();
    assert!(vec1(&empty.sort(0, false).unwrap(), &s).is_empty());
    assert!(vec1(&empty.unique(false, true).unwrap(), &s).is_empty());
}
