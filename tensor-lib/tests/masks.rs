//! Boolean masks and unknown shapes (Mars' iterative tiling), on a real embedded cluster:
//! the mask's chunks run first, their lengths are read back, and tiling resumes.

use ares_tensor::{Scalar, Session, Slice, TensorError, UNKNOWN, concatenate, from_array, random, scalar};
use ndarray::{ArrayD, IxDyn};

fn cluster() {
    ares::init_with(ares::Config::default().num_cpus(2)).expect("init");
}

#[test]
fn mask_then_reduce_pipelines_match_numpy_semantics() {
    cluster();
    let s = Session::new();
    let a = random::rand(&[1000, 30], &[128, 7], 3).unwrap();
    let x = a.fetch::<f64>(&s).unwrap();
    let picked: Vec<f64> = x.iter().copied().filter(|&v| v > 0.5).collect();

    // a[a > 0.5].sum(), mean, max, argmax and the count, each from the same lazy mask.
    let m = a.mask(&a.gt_scalar(0.5)).unwrap();
    assert_eq!(m.shape(), &[UNKNOWN], "unknown until it runs");
    let sum: f64 = picked.iter().sum();
    assert!((s.scalar(&m.sum()).unwrap() - sum).abs() < 1e-9 * sum);
    let mean = sum / picked.len() as f64;
    assert!((s.scalar(&m.mean()).unwrap() - mean).abs() < 1e-12);
    let max = picked.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!(s.scalar(&m.max()).unwrap(), max);
    let argmax = picked.iter().position(|&v| v == max).unwrap();
    assert_eq!(s.scalar(&m.argmax()).unwrap(), argmax as f64);
    assert_eq!(m.shape(), &[picked.len() as u64], "known once it ran");

    // Element-wise after the mask, then a reduction.
    let t = (&m * 2.0 + 1.0).sum();
    let want: f64 = picked.iter().map(|v| v * 2.0 + 1.0).sum();
    assert!((s.scalar(&t).unwrap() - want).abs() < 1e-9 * want);

    // Reshape after a mask: the length is known only after the mask ran.
    let even = picked.len() / 2 * 2;
    let m2 = m.slice(&[Slice::range(0, even as i64)]).unwrap().reshape(&[-1, 2]).unwrap();
    let got = m2.fetch::<f64>(&s).unwrap();
    let want = ArrayD::from_shape_vec(IxDyn(&[even / 2, 2]), picked[..even].to_vec()).unwrap();
    assert_eq!(got, want);
    ares::shutdown();
}

#[test]
fn reshape_and_concatenate_of_an_unexecuted_mask_resolve_when_run() {
    cluster();
    let s = Session::new();
    let v: Vec<f64> = (0..240).map(|i| ((i * 37) % 101) as f64).collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[240]), v.clone()).unwrap();
    let a = from_array(&x, &[17]).unwrap();
    let m = a.mask(&a.lt_scalar(50.0)).unwrap();
    let picked: Vec<f64> = v.iter().copied().filter(|&v| v < 50.0).collect();
    // A reshape built while the length is unknown: -1 is inferred after the mask ran.
    let r = m.reshape(&[-1, 1]).unwrap();
    assert_eq!(r.shape(), &[UNKNOWN, 1]);
    let got = r.sum().fetch::<f64>(&s).unwrap();
    assert_eq!(got.iter().next().copied().unwrap(), picked.iter().sum::<f64>());
    assert_eq!(r.shape(), &[picked.len() as u64, 1]);
    // Two masks joined, then masked again.
    let both = concatenate(&[m.clone(), a.mask(&a.ge_scalar(90.0)).unwrap()], 0).unwrap();
    let again = both.mask(&both.gt(&scalar(Scalar::F64(20.0))).unwrap()).unwrap();
    let mut want: Vec<f64> = picked.clone();
    want.extend(v.iter().copied().filter(|&v| v >= 90.0));
    let want: Vec<f64> = want.into_iter().filter(|&v| v > 20.0).collect();
    assert_eq!(again.fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, want);
    ares::shutdown();
}

#[test]
fn operations_that_need_a_known_shape_say_so() {
    cluster();
    let s = Session::new();
    let a = random::rand(&[100], &[10], 1).unwrap();
    let m = a.mask(&a.gt_scalar(0.5)).unwrap();
    assert!(matches!(m.slice(&[Slice::range(0, 3)]), Err(TensorError::UnknownShape { .. })));
    assert!(matches!(m.binary(ares_tensor::kernel::BinOp::Add, &a), Err(TensorError::UnknownShape { .. })));
    assert!(matches!(a.mask(&a), Err(TensorError::BadDType { .. })), "a float mask");
    assert!(matches!(a.reshape(&[3, -1]), Err(TensorError::BadReshape { .. })));
    assert!(matches!(a.reshape(&[-1, -1]), Err(TensorError::BadReshape { .. })));
    assert!(matches!(a.slice(&[Slice::new(None, None, 0)]), Err(TensorError::BadIndex { .. })));
    assert!(matches!(a.permute(&[1]), Err(TensorError::BadIndex { .. })));
    assert!(matches!(a.rechunk(&[0]), Err(TensorError::BadChunks { .. })));
    // After running, the same slice works.
    m.execute(&s).unwrap();
    let head = m.slice(&[Slice::range(0, 3)]).unwrap().fetch::<f64>(&s).unwrap();
    let all = m.fetch::<f64>(&s).unwrap();
    assert_eq!(head.as_slice().unwrap(), &all.as_slice().unwrap()[..3]);
    ares::shutdown();
}

#[test]
fn sessions_are_isolated_and_results_free_their_chunks_when_dropped() {
    cluster();
    let (s1, s2) = (Session::new(), Session::new());
    let a = random::rand(&[512, 512], &[128, 128], 9).unwrap();
    let b = (&a + 1.0).rechunk(&[256, 256]).unwrap();
    s1.execute(&b).unwrap();
    let used = ares::node_stats().unwrap().store_used;
    assert!(used >= 512 * 512 * 8, "the executed result is kept ({used} bytes)");
    // Another session computes its own copy rather than reading the first one's.
    s2.execute(&b).unwrap();
    assert_eq!(ares::node_stats().unwrap().store_used, 2 * used, "two sessions, two copies");
    let x2 = b.fetch::<f64>(&s2).unwrap();
    assert_eq!(x2, b.fetch::<f64>(&s1).unwrap());
    assert_eq!(ares::node_stats().unwrap().store_used, 2 * used, "fetching reads the kept copies");
    drop((a, b));
    // Drops are processed asynchronously: the store must come back to empty.
    while ares::node_stats().unwrap().store_used != 0 {
        std::thread::yield_now();
    }
    ares::shutdown();
}

#[test]
fn tensors_built_on_unknown_shapes_are_rechunked_once_the_lengths_are_known() {
    use ares_tensor::ones;
    cluster();
    let s = Session::new();
    let v: Vec<f64> = (0..60).map(|i| ((i * 29) % 31) as f64 - 15.0).collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[60]), v.clone()).unwrap();
    let a = from_array(&x, &[7]).unwrap();
    let m = a.mask(&a.gt_scalar(0.0)).unwrap();
    let picked: Vec<f64> = v.iter().copied().filter(|&v| v > 0.0).collect();
    // A column times a row split in three: the flat reshape needs whole rows first.
    let u = m.reshape(&[-1, 1]).unwrap();
    let p = &u * &ones(&[1, 6], &[1, 2]).unwrap();
    let flat: Vec<f64> = picked.iter().flat_map(|&v| [v; 6]).collect();
    assert_eq!(p.reshape(&[-1]).unwrap().fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, flat);
    let best = picked.iter().cloned().fold(f64::MIN, f64::max);
    let first = flat.iter().position(|&v| v == best).unwrap();
    assert_eq!(s.scalar(&p.argmax()).unwrap(), first as f64);

    // A mask of one unknown-length tensor by another of the same length but other chunks.
    let b = from_array(&x, &[13]).unwrap();
    let mb = b.mask(&b.gt_scalar(0.0)).unwrap();
    let both = m.mask(&mb.gt_scalar(5.0)).unwrap();
    let want: Vec<f64> = picked.iter().copied().filter(|&v| v > 5.0).collect();
    assert_eq!(both.fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, want);
    // Different lengths are a typed error.
    let short = b.mask(&b.gt_scalar(3.0)).unwrap();
    assert!(matches!(m.mask(&short.gt_scalar(0.0)).unwrap().fetch::<f64>(&s), Err(TensorError::ShapeMismatch { .. })));

    // Rechunking an unknown length: the chunks are decided once it is known.
    let one = from_array(&x, &[60]).unwrap();
    let r = one.mask(&one.gt_scalar(0.0)).unwrap().rechunk(&[4]).unwrap();
    assert_eq!(r.fetch::<f64>(&s).unwrap().into_raw_vec_and_offset().0, picked);
    assert_eq!(r.chunks()[0].len(), picked.len().div_ceil(4));
    ares::shutdown();
}

#[test]
fn a_mask_result_of_one_element_split_over_chunks_broadcasts_with_scalars() {
    // [F, F] in chunks of 1 masked by [T, F]: one element, its chunks `[1, 0]`, which a
    // 0-d operand (a scalar) must broadcast against (it failed as a chunk mismatch).
    cluster();
    let s = Session::new();
    let x = from_array(&ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0f64, 2.0]).unwrap(), &[1]).unwrap();
    let m = from_array(&ArrayD::from_shape_vec(IxDyn(&[2]), vec![true, false]).unwrap(), &[1]).unwrap();
    let picked = x.mask(&m).unwrap();
    let t = (&picked * 2.0 + 1.0).sum();
    assert_eq!(s.scalar(&t).unwrap(), 3.0);
    let got = (&picked * 2.0).fetch::<f64>(&s).unwrap();
    assert_eq!(got.into_raw_vec_and_offset().0, vec![2.0]);
    ares::shutdown();
}
