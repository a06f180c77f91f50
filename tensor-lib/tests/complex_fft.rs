//! complex64/complex128 tensors and FFTs on a real embedded cluster, against oracles
//! computed here: arithmetic and functions element by element, reductions, a matrix
//! product, the transforms against the definition of the DFT under uneven chunkings of
//! the transformed axis, the factorizations of complex matrices, and the typed errors of
//! what is refused.

use ares_tensor::data::{C64, C128};
use ares_tensor::kernel::{BinOp, FftKind, ReduceOp, UnOp};
use ares_tensor::{DType, Session, TensorError, from_array};
use ndarray::{ArrayD, Axis, IxDyn};

fn close(a: C128, b: C128, tol: f64) -> bool {
    (a.re - b.re).abs() <= tol * (1.0 + b.re.abs()) && (a.im - b.im).abs() <= tol * (1.0 + b.im.abs())
}

fn sample(shape: &[usize]) -> ArrayD<C128> {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| C128::new(((i * 37) % 11) as f64 - 5.0, ((i * 17) % 7) as f64 * 0.5 - 1.5)).collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

/// The DFT of each lane along `axis`, from its definition.
fn dft(a: &ArrayD<C128>, axis: usize, sign: f64, scale: f64) -> ArrayD<C128> {
    let mut out = a.clone();
    for (lane_in, mut lane_out) in a.lanes(Axis(axis)).into_iter().zip(out.lanes_mut(Axis(axis))) {
        let n = lane_in.len();
        for k in 0..n {
            let mut acc = C128::default();
            for (j, z) in lane_in.iter().enumerate() {
                let (s, c) = (sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64).sin_cos();
                acc = C128::new(acc.re + z.re * c - z.im * s, acc.im + z.re * s + z.im * c);
            }
            lane_out[k] = C128::new(acc.re * scale, acc.im * scale);
        }
    }
    out
}

#[test]
fn complex_arithmetic_functions_and_reductions_match_an_elementwise_oracle() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a = sample(&[5, 7]);
    let x = from_array(&a, &[2, 3]).unwrap();
    assert_eq!(x.dtype(), DType::C128);
    let y = x.binary(BinOp::Mul, &x.unary_op(UnOp::Conj).unwrap()).unwrap();
    let got = y.fetch::<C128>(&s).unwrap();
    for (g, z) in got.iter().zip(a.iter()) {
        assert!(close(*g, C128::new(z.re * z.re + z.im * z.im, 0.0), 1e-12), "z·conj(z) of {z:?} gave {g:?}");
    }
    let mag = x.unary_op(UnOp::Abs).unwrap();
    assert_eq!(mag.dtype(), DType::F64, "|z| is real");
    let m = mag.fetch::<f64>(&s).unwrap();
    for (g, z) in m.iter().zip(a.iter()) {
        assert!((g - z.re.hypot(z.im)).abs() < 1e-12);
    }
    let sum = x.reduce(ReduceOp::Sum, None, false).unwrap().fetch::<C128>(&s).unwrap();
    let want = a.iter().fold(C128::default(), |acc, z| C128::new(acc.re + z.re, acc.im + z.im));
    assert!(close(sum[[]], want, 1e-12), "{:?} vs {want:?}", sum[[]]);
    let mean = x.reduce(ReduceOp::Mean, Some(&[0]), false).unwrap().fetch::<C128>(&s).unwrap();
    for (c, col) in a.lanes(Axis(0)).into_iter().enumerate() {
        let t = col.iter().fold(C128::default(), |acc, z| C128::new(acc.re + z.re, acc.im + z.im));
        assert!(close(mean[[c]], C128::new(t.re / 5.0, t.im / 5.0), 1e-12));
    }
    // complex64 stays complex64; a float64 operand makes complex128 (numpy's promotion).
    let small = x.astype(DType::C64);
    assert_eq!(small.dtype(), DType::C64);
    assert_eq!(small.binary(BinOp::Add, &x.unary_op(UnOp::Real).unwrap()).unwrap().dtype(), DType::C128);
    let e = small.unary_op(UnOp::Exp).unwrap().fetch::<C64>(&s).unwrap();
    let z = a[[1, 2]];
    let want = C128::new(z.re.exp() * z.im.cos(), z.re.exp() * z.im.sin());
    assert!(close(C128::from(e[[1, 2]]), want, 1e-5), "{:?} vs {want:?}", e[[1, 2]]);
}

#[test]
fn complex_matrix_products_and_inverses_match_an_oracle() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let (a, b) = (sample(&[4, 6]), sample(&[6, 3]));
    // a's column chunks (4, 2) line up with b's row chunks, as a blocked product needs.
    let got = from_array(&a, &[3, 4]).unwrap().matmul(&from_array(&b, &[4, 2]).unwrap()).unwrap();
    let got = got.fetch::<C128>(&s).unwrap();
    for i in 0..4 {
        for j in 0..3 {
            let mut acc = C128::default();
            for k in 0..6 {
                let (x, y) = (a[[i, k]], b[[k, j]]);
                acc = C128::new(acc.re + x.re * y.re - x.im * y.im, acc.im + x.re * y.im + x.im * y.re);
            }
            assert!(close(got[[i, j]], acc, 1e-12), "({i},{j}): {:?} vs {acc:?}", got[[i, j]]);
        }
    }
    // The factorizations of a complex matrix: its inverse gives the identity back.
    let sq = sample(&[4, 4]);
    let x = from_array(&sq, &[3, 2]).unwrap();
    let inv = x.inv().unwrap();
    assert_eq!(inv.dtype(), DType::C128);
    let eye = x.rechunk(&[4, 4]).unwrap().matmul(&inv.rechunk(&[4, 4]).unwrap()).unwrap().fetch::<C128>(&s).unwrap();
    for ((i, j), z) in eye.indexed_iter().map(|(ix, z)| ((ix[0], ix[1]), *z)) {
        assert!(close(z, C128::new(if i == j { 1.0 } else { 0.0 }, 0.0), 1e-9), "a·inv(a) at ({i},{j}) is {z:?}");
    }
    let zero = from_array(&ArrayD::from_elem(IxDyn(&[3, 3]), C128::default()), &[3, 3]).unwrap();
    let err = zero.inv().unwrap().fetch::<C128>(&s).unwrap_err();
    assert!(err.to_string().contains("singular"), "{err}");
}

#[test]
fn transforms_match_the_definition_under_uneven_chunkings() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a = sample(&[6, 10]);
    for chunks in [[6, 10], [4, 3], [1, 7], [5, 1]] {
        let x = from_array(&a, &chunks).unwrap();
        for axis in 0..2 {
            let n = a.shape()[axis];
            let f = x.fft(axis, FftKind::Forward, 1.0).unwrap();
            assert_eq!(f.chunks()[axis].len(), 1, "the transformed axis is whole in each chunk");
            let got = f.fetch::<C128>(&s).unwrap();
            for (g, w) in got.iter().zip(dft(&a, axis, -1.0, 1.0).iter()) {
                assert!(close(*g, *w, 1e-9), "fft along {axis}, chunks {chunks:?}: {g:?} vs {w:?}");
            }
            let back = f.fft(axis, FftKind::Inverse, 1.0 / n as f64).unwrap().fetch::<C128>(&s).unwrap();
            for (g, w) in back.iter().zip(a.iter()) {
                assert!(close(*g, *w, 1e-9), "ifft(fft) along {axis}, chunks {chunks:?}");
            }
        }
    }
    // A real signal back from the first n/2 + 1 coefficients of its spectrum.
    let signal =
        ArrayD::from_shape_vec(IxDyn(&[3, 9]), (0..27).map(|i| ((i * 5) % 13) as f64 - 6.0).collect()).unwrap();
    let spectrum = from_array(&signal, &[2, 4]).unwrap().fft(1, FftKind::Forward, 1.0).unwrap();
    let half = spectrum.slice(&[ares_tensor::Slice::all(), ares_tensor::Slice::range(0, 5)]).unwrap();
    let back = half.fft(1, FftKind::RealInverse { n: 9 }, 1.0 / 9.0).unwrap();
    assert_eq!(back.dtype(), DType::F64);
    let got = back.fetch::<f64>(&s).unwrap();
    for (g, w) in got.iter().zip(signal.iter()) {
        assert!((g - w).abs() < 1e-9, "irfft gave {g}, the signal has {w}");
    }
    let bad = half.fft(1, FftKind::RealInverse { n: 12 }, 1.0);
    assert!(matches!(bad, Err(TensorError::BadIndex { .. })), "12 points need 7 coefficients, not 5");
    assert!(matches!(half.fft(2, FftKind::Forward, 1.0), Err(TensorError::BadAxis { axis: 2, ndim: 2 })));
}
