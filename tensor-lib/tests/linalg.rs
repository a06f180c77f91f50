//! Blocked matrix products against ndarray's `dot`, on a real cluster.

use ares_tensor::{Session, TensorError, from_array};
use ndarray::{Array2, ArrayD, Ix2};

fn data(r: usize, c: usize, salt: u64) -> ArrayD<f64> {
    Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 31 + j as u64 * 17 + salt * 7) % 23;
        h as f64 / 7.0 - 1.5
    })
    .into_dyn()
}

fn close(a: &ArrayD<f64>, b: &ArrayD<f64>) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn blocked_products_match_ndarray() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    for (m, k, n, cm, ck, cn) in [(7, 5, 6, 3, 2, 4), (4, 4, 4, 4, 4, 4), (9, 3, 2, 1, 1, 1), (10, 8, 7, 4, 3, 5)] {
        let (x, y) = (data(m, k, 1), data(k, n, 2));
        let (a, b) = (from_array(&x, &[cm, ck]).unwrap(), from_array(&y, &[ck, cn]).unwrap());
        let want = x.view().into_dimensionality::<Ix2>().unwrap().dot(&y.view().into_dimensionality::<Ix2>().unwrap());
        close(&a.matmul(&b).unwrap().fetch::<f64>(&s).unwrap(), &want.into_dyn());
        // Transposed operands, and a · aᵀ (only the upper blocks are multiplied).
        let at = a.t().unwrap();
        let x2 = x.view().into_dimensionality::<Ix2>().unwrap();
        close(&at.fetch::<f64>(&s).unwrap(), &x2.t().to_owned().into_dyn());
        let gram = a.matmul(&at).unwrap();
        close(&gram.fetch::<f64>(&s).unwrap(), &x2.dot(&x2.t()).into_dyn());
        let gram_t = at.matmul(&a).unwrap();
        close(&gram_t.fetch::<f64>(&s).unwrap(), &x2.t().dot(&x2).into_dyn());
        // W3's shape: (a @ a.T - a).std() needs a square a; fused consumer of the product.
        if m == k {
            let sq = from_array(&x, &[cm, cm]).unwrap();
            let e = (sq.matmul(&sq.t().unwrap()).unwrap() - sq.clone()).std();
            let d = x2.dot(&x2.t()) - x2;
            let mean = d.mean().unwrap();
            let std = d.mapv(|v| (v - mean) * (v - mean)).mean().unwrap().sqrt();
            assert!((s.scalar(&e).unwrap() - std).abs() < 1e-9);
        }
    }
    let a = from_array(&data(4, 6, 1), &[2, 3]).unwrap();
    let b = from_array(&data(6, 4, 2), &[2, 2]).unwrap();
    assert!(matches!(a.matmul(&b), Err(TensorError::ChunkMismatch { .. })));
    assert!(matches!(a.matmul(&a), Err(TensorError::ShapeMismatch { .. })));
    let ints = from_array(&data(4, 4, 1).mapv(|v| v as i64), &[2, 2]).unwrap();
    assert!(matches!(ints.matmul(&ints), Err(TensorError::BadDType { .. })));
    ares::shutdown();
}
