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
    ares::shutdown();
}

fn mat(a: &ArrayD<f64>) -> Array2<f64> {
    a.view().into_dimensionality::<Ix2>().unwrap().to_owned()
}

fn near(a: &Array2<f64>, b: &Array2<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}\n{a}\n{b}");
    }
}

/// A well-conditioned pseudo-random matrix (not the library's RNG).
fn noise(r: usize, c: usize, salt: u64) -> Array2<f64> {
    Array2::from_shape_fn((r, c), |(i, j)| {
        // splitmix64 of the position: no linear structure, so the matrix is well conditioned.
        let mut z = (i as u64) << 32 ^ (j as u64) << 8 ^ salt;
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64 * 2.0 - 1.0
    })
}

#[test]
fn tsqr_and_its_svd_reconstruct_tall_skinny_matrices() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    // Row chunks of 9 (the last of 5), and of 8 with a last chunk (2) merged into the one
    // before since it has fewer rows than columns.
    for (m, n, rows) in [(50, 4, 9), (50, 7, 8), (6, 6, 2), (12, 1, 1)] {
        let x = noise(m, n, m as u64);
        let a = from_array(&x.clone().into_dyn(), &[rows, n]).unwrap();
        let (q, r) = a.qr().unwrap();
        let (qv, rv) = (mat(&q.fetch::<f64>(&s).unwrap()), mat(&r.fetch::<f64>(&s).unwrap()));
        near(&qv.dot(&rv), &x, 1e-10);
        near(&qv.t().dot(&qv), &Array2::eye(n), 1e-10);
        for i in 0..n {
            for j in 0..i {
                assert_eq!(rv[(i, j)], 0.0, "R is upper triangular");
            }
        }
        // Q · R in one expression (both factors from the same TSQR stages).
        near(&mat(&q.matmul(&r).unwrap().fetch::<f64>(&s).unwrap()), &x, 1e-10);
        let (u, sv, vt) = a.svd().unwrap();
        let (uv, svv, vtv) =
            (mat(&u.fetch::<f64>(&s).unwrap()), sv.fetch::<f64>(&s).unwrap(), mat(&vt.fetch::<f64>(&s).unwrap()));
        let us = Array2::from_shape_fn((m, n), |(i, j)| uv[(i, j)] * svv[[j]]);
        near(&us.dot(&vtv), &x, 1e-9);
        near(&uv.t().dot(&uv), &Array2::eye(n), 1e-9);
        assert!(svv.iter().zip(svv.iter().skip(1)).all(|(a, b)| a >= b && *b >= 0.0), "decreasing: {svv}");
    }
    // Wide matrices: numpy's reduced form, Q m×m and R m×n (any column chunking).
    for (m, n, cols) in [(3, 5, 5), (4, 11, 3), (2, 9, 1)] {
        let mut x = noise(m, n, 7);
        for i in 0..m {
            x[(i, i)] += (m + 1) as f64;
        }
        let a = from_array(&x.clone().into_dyn(), &[m, cols]).unwrap();
        let (q, r) = a.qr().unwrap();
        assert_eq!((q.shape(), r.shape()), (&[m as u64, m as u64][..], &[m as u64, n as u64][..]));
        let (qv, rv) = (mat(&q.fetch::<f64>(&s).unwrap()), mat(&r.fetch::<f64>(&s).unwrap()));
        near(&qv.dot(&rv), &x, 1e-10);
        near(&qv.t().dot(&qv), &Array2::eye(m), 1e-10);
        assert!((0..m).all(|i| (0..i).all(|j| rv[(i, j)] == 0.0)), "R is upper triangular");
    }
    let vector = from_array(&noise(1, 5, 1).into_dyn().into_shape_with_order(vec![5]).unwrap(), &[5]).unwrap();
    assert!(matches!(vector.qr(), Err(TensorError::BadMatrix { .. })));
    ares::shutdown();
}

#[test]
fn integer_and_boolean_products_are_exact_as_numpy_computes_them() {
    use ndarray::Array2;
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let x = Array2::from_shape_fn((5, 7), |(i, j)| (i as i64 * 3 - j as i64 * 2) * 1_000_003).into_dyn();
    let y = Array2::from_shape_fn((7, 4), |(i, j)| (i as i64 - j as i64 * 5) * 999_983).into_dyn();
    let (a, b) = (from_array(&x, &[2, 3]).unwrap(), from_array(&y, &[3, 3]).unwrap());
    let p = a.matmul(&b).unwrap();
    assert_eq!(p.dtype(), ares_tensor::DType::I64);
    let (x2, y2) = (x.view().into_dimensionality::<Ix2>().unwrap(), y.view().into_dimensionality::<Ix2>().unwrap());
    let want = Array2::from_shape_fn((5, 4), |(i, j)| {
        (0..7).fold(0i64, |acc, k| acc.wrapping_add(x2[(i, k)].wrapping_mul(y2[(k, j)])))
    });
    assert_eq!(p.fetch::<i64>(&s).unwrap(), want.into_dyn());
    // a · aᵀ of integers (the symmetric path).
    let gram = a.matmul(&a.t().unwrap()).unwrap().fetch::<i64>(&s).unwrap();
    assert_eq!(gram, x2.dot(&x2.t()).into_dyn());
    // int32 wraps in 32 bits, as numpy's does.
    let big = from_array(&Array2::from_elem((2, 3), 100_000i32).into_dyn(), &[1, 2]).unwrap();
    let wrapped = big.matmul(&big.t().unwrap()).unwrap();
    assert_eq!(wrapped.dtype(), ares_tensor::DType::I32);
    let w = 3i32.wrapping_mul(100_000i32.wrapping_mul(100_000));
    assert!(wrapped.fetch::<i32>(&s).unwrap().iter().all(|v| *v == w));
    // Booleans: true where some a[i, k] && b[k, j].
    let bx = Array2::from_shape_fn((4, 6), |(i, j)| (i + j) % 5 == 0).into_dyn();
    let by = Array2::from_shape_fn((6, 3), |(i, j)| i == 2 * j).into_dyn();
    let bp = from_array(&bx, &[3, 4]).unwrap().matmul(&from_array(&by, &[4, 2]).unwrap()).unwrap();
    assert_eq!(bp.dtype(), ares_tensor::DType::Bool);
    let (bx2, by2) = (bx.view().into_dimensionality::<Ix2>().unwrap(), by.view().into_dimensionality::<Ix2>().unwrap());
    let want = Array2::from_shape_fn((4, 3), |(i, j)| (0..6).any(|k| bx2[(i, k)] && by2[(k, j)]));
    assert_eq!(bp.fetch::<bool>(&s).unwrap(), want.into_dyn());
    // Integer tensordot keeps its dtype.
    let td = ares_tensor::tensordot(&a, &b, &[1], &[0]).unwrap();
    assert_eq!(td.dtype(), ares_tensor::DType::I64);
    ares::shutdown();
}

#[test]
fn cholesky_solve_and_inv_match_their_definitions() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    for (n, c) in [(10, 3), (7, 7), (5, 1)] {
        let m = noise(n, n, 3);
        let spd = m.dot(&m.t()) + Array2::<f64>::eye(n) * n as f64;
        let a = from_array(&spd.clone().into_dyn(), &[c, c]).unwrap();
        let l = mat(&a.cholesky().unwrap().fetch::<f64>(&s).unwrap());
        near(&l.dot(&l.t()), &spd, 1e-10);
        assert!((0..n).all(|i| (i + 1..n).all(|j| l[(i, j)] == 0.0)), "L is lower triangular");

        // A general matrix whose leading entries are zero: only pivoting solves it.
        let mut g = noise(n, n, 5);
        g[(0, 0)] = 0.0;
        let ga = from_array(&g.clone().into_dyn(), &[c, c]).unwrap();
        let bv = noise(n, 2, 9);
        let b = from_array(&bv.clone().into_dyn(), &[c, 2]).unwrap();
        let x = mat(&ares_tensor::solve(&ga, &b).unwrap().fetch::<f64>(&s).unwrap());
        near(&g.dot(&x), &bv, 1e-8);
        // A vector right-hand side keeps its shape.
        let b1 = from_array(&bv.column(0).to_owned().into_dyn(), &[c]).unwrap();
        let x1 = ares_tensor::solve(&ga, &b1).unwrap().fetch::<f64>(&s).unwrap();
        assert_eq!(x1.shape(), &[n]);
        near(
            &g.dot(&x1.into_dimensionality::<ndarray::Ix1>().unwrap()).insert_axis(ndarray::Axis(1)),
            &bv.slice(ndarray::s![.., 0..1]).to_owned(),
            1e-8,
        );
        let inv = mat(&ga.inv().unwrap().fetch::<f64>(&s).unwrap());
        near(&g.dot(&inv), &Array2::eye(n), 1e-8);
        // Two solves in one expression, each rechunking its operands while tiling: every
        // node tiling makes stays apart from the others (no memo mix-up).
        let h = noise(n, n, 11) + Array2::<f64>::eye(n) * n as f64;
        let ha = from_array(&h.clone().into_dyn(), &[c, c]).unwrap();
        let both = ares_tensor::solve(&ga, &b).unwrap() + ares_tensor::solve(&ha, &b).unwrap();
        let want = mat(&ares_tensor::solve(&ga, &b).unwrap().fetch::<f64>(&s).unwrap())
            + mat(&ares_tensor::solve(&ha, &b).unwrap().fetch::<f64>(&s).unwrap());
        near(&mat(&both.fetch::<f64>(&s).unwrap()), &want, 1e-10);
        let invs = ga.inv().unwrap() + ha.inv().unwrap();
        let inv_h = mat(&ha.inv().unwrap().fetch::<f64>(&s).unwrap());
        near(&h.dot(&inv_h), &Array2::eye(n), 1e-8);
        near(&mat(&invs.fetch::<f64>(&s).unwrap()), &(inv + inv_h), 1e-8);
    }
    // Numeric failures name the problem.
    let zeros = from_array(&Array2::<f64>::zeros((4, 4)).into_dyn(), &[2, 2]).unwrap();
    let err = ares_tensor::solve(&zeros, &zeros).unwrap().fetch::<f64>(&s).unwrap_err().to_string();
    assert!(err.contains("singular"), "{err}");
    let neg = from_array(&(Array2::<f64>::eye(4) * -1.0).into_dyn(), &[2, 2]).unwrap();
    let err = neg.cholesky().unwrap().fetch::<f64>(&s).unwrap_err().to_string();
    assert!(err.contains("not positive definite"), "{err}");
    assert!(matches!(
        ares_tensor::solve(&zeros, &from_array(&Array2::<f64>::zeros((3, 1)).into_dyn(), &[3, 1]).unwrap()),
        Err(TensorError::ShapeMismatch { .. })
    ));
    ares::shutdown();
}

#[test]
fn inner_and_tensordot_match_explicit_sums() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let (x, y) = (data(6, 5, 1), data(4, 5, 2));
    let (a, b) = (from_array(&x, &[4, 2]).unwrap(), from_array(&y, &[3, 5]).unwrap());
    let want = mat(&x).dot(&mat(&y).t());
    near(&mat(&ares_tensor::inner(&a, &b).unwrap().fetch::<f64>(&s).unwrap()), &want, 1e-12);
    let v: Vec<f64> = (0..9).map(|i| i as f64 - 4.0).collect();
    let w: Vec<f64> = (0..9).map(|i| (i * i) as f64 / 3.0).collect();
    let (va, wa) = (ndarray::Array1::from(v.clone()).into_dyn(), ndarray::Array1::from(w.clone()).into_dyn());
    let dot = ares_tensor::inner(&from_array(&va, &[4]).unwrap(), &from_array(&wa, &[2]).unwrap()).unwrap();
    assert!((s.scalar(&dot).unwrap() - v.iter().zip(&w).map(|(p, q)| p * q).sum::<f64>()).abs() < 1e-12);
    // tensordot over axes (0, 2) of a 3×4×5 and (1, 0) of a 5×3×2: result 4×2.
    let t3 = ArrayD::from_shape_fn(ndarray::IxDyn(&[3, 4, 5]), |i| (i[0] * 20 + i[1] * 5 + i[2]) as f64 / 10.0);
    let u3 = ArrayD::from_shape_fn(ndarray::IxDyn(&[5, 3, 2]), |i| (i[0] * 6 + i[1] * 2 + i[2]) as f64 / 7.0 - 1.0);
    let got = ares_tensor::tensordot(
        &from_array(&t3, &[2, 3, 2]).unwrap(),
        &from_array(&u3, &[3, 2, 1]).unwrap(),
        &[0, 2],
        &[1, 0],
    )
    .unwrap()
    .fetch::<f64>(&s)
    .unwrap();
    let want = Array2::from_shape_fn((4, 2), |(j, l)| {
        let mut acc = 0.0;
        for i in 0..3 {
            for k in 0..5 {
                acc += t3[[i, j, k]] * u3[[k, i, l]];
            }
        }
        acc
    });
    near(&mat(&got), &want, 1e-12);
    ares::shutdown();
}

#[test]
fn determinants_and_symmetric_eigenpairs_of_chunked_matrices() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let scalar = |t: &ares_tensor::Tensor| t.fetch::<f64>(&s).unwrap().iter().copied().next().unwrap();
    // Triangular with known diagonal, conjugated by a permutation of odd parity: the
    // determinant is minus the product of the diagonal.
    let n = 7;
    let mut x = noise(n, n, 3);
    for i in 0..n {
        for j in 0..i {
            x[(i, j)] = 0.0;
        }
        x[(i, i)] = if i == 2 { -0.5 } else { (i + 1) as f64 };
    }
    let swapped = Array2::from_shape_fn((n, n), |(i, j)| {
        x[(
            if i == 0 {
                1
            } else if i == 1 {
                0
            } else {
                i
            },
            j,
        )]
    });
    let want: f64 = -(1..=n).map(|i| if i == 3 { -0.5 } else { i as f64 }).product::<f64>();
    let a = from_array(&swapped.clone().into_dyn(), &[3, 4]).unwrap();
    let (sign, log, det) = a.slogdet().unwrap();
    assert_eq!(det.shape(), &[] as &[u64]);
    assert!((scalar(&det) - want).abs() < 1e-9 * want.abs(), "{} vs {want}", scalar(&det));
    assert_eq!(scalar(&sign), want.signum());
    assert!((scalar(&log) - want.abs().ln()).abs() < 1e-12);
    // Singular: a repeated row.
    let mut sing = noise(4, 4, 9);
    for j in 0..4 {
        sing[(3, j)] = sing[(1, j)];
    }
    let (sign, log, det) = from_array(&sing.into_dyn(), &[2, 2]).unwrap().slogdet().unwrap();
    assert_eq!((scalar(&sign), scalar(&log), scalar(&det)), (0.0, f64::NEG_INFINITY, 0.0));
    // eigh: A·V = V·diag(w), V orthonormal, w ascending; only the lower triangle is read.
    let b = noise(9, 9, 5);
    let sym = &b + &b.t();
    let mut lower_only = sym.clone();
    for i in 0..9 {
        for j in i + 1..9 {
            lower_only[(i, j)] = 1e6;
        }
    }
    let (w, v) = from_array(&lower_only.into_dyn(), &[4, 5]).unwrap().eigh().unwrap();
    let (wv, vv) = (w.fetch::<f64>(&s).unwrap(), mat(&v.fetch::<f64>(&s).unwrap()));
    assert!(wv.iter().zip(wv.iter().skip(1)).all(|(a, b)| a <= b), "ascending: {wv}");
    let vw = Array2::from_shape_fn((9, 9), |(i, j)| vv[(i, j)] * wv[[j]]);
    near(&sym.dot(&vv), &vw, 1e-9);
    near(&vv.t().dot(&vv), &Array2::eye(9), 1e-9);
    let wide = from_array(&noise(3, 4, 1).into_dyn(), &[3, 4]).unwrap();
    assert!(matches!(wide.eigh(), Err(TensorError::BadMatrix { .. })));
    assert!(matches!(wide.slogdet(), Err(TensorError::BadMatrix { .. })));
    ares::shutdown();
}
