//! The Array API's element-wise functions on a real embedded cluster, against oracles
//! computed here with Rust's own functions (the ones the kernels must agree with to the
//! bit), on uneven chunkings, special values and integer extremes.

use ares_tensor::kernel::{BinOp, UnOp};
use ares_tensor::{DType, Elem, Session, Tensor, TensorError, from_array};
use ndarray::{ArrayD, IxDyn};

fn t<T: Elem>(v: &[T], chunk: usize) -> Tensor {
    from_array(&ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap(), &[chunk]).unwrap()
}

fn got<T: Elem>(s: &Session, x: &Tensor) -> Vec<T> {
    x.fetch::<T>(s).unwrap().iter().copied().collect()
}

/// Equal as numpy compares results here: the same bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn float_functions_match_rusts_to_the_bit_in_float32_and_float64() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let xs: Vec<f64> = vec![-0.9, -0.5, -0.0, 0.0, 0.25, 0.5, 0.75, 0.99, f64::NAN, 1e-12, -1e-12];
    let big: Vec<f64> = vec![1.0, 1.5, 2.0, 10.0, 1e3, f64::INFINITY, 0.5, f64::NAN, 3.0, 100.0, 7.0];
    type F = fn(f64) -> f64;
    let cases: Vec<(UnOp, F, &Vec<f64>)> = vec![
        (UnOp::Tan, f64::tan, &xs),
        (UnOp::Sinh, f64::sinh, &xs),
        (UnOp::Cosh, f64::cosh, &xs),
        (UnOp::Tanh, f64::tanh, &xs),
        (UnOp::Asin, f64::asin, &xs),
        (UnOp::Acos, f64::acos, &xs),
        (UnOp::Atan, f64::atan, &xs),
        (UnOp::Asinh, f64::asinh, &xs),
        (UnOp::Acosh, f64::acosh, &big),
        (UnOp::Atanh, f64::atanh, &xs),
        (UnOp::Expm1, f64::exp_m1, &xs),
        (UnOp::Log1p, f64::ln_1p, &xs),
        (UnOp::Log2, f64::log2, &big),
        (UnOp::Log10, f64::log10, &big),
        (UnOp::Floor, f64::floor, &big),
        (UnOp::Ceil, f64::ceil, &xs),
        (UnOp::Trunc, f64::trunc, &xs),
    ];
    for (op, f, v) in cases {
        for chunk in [3, 11] {
            let x = t(v, chunk);
            let y = x.unary_op(op).unwrap();
            assert_eq!(y.dtype(), DType::F64);
            for (g, w) in got::<f64>(&s, &y).into_iter().zip(v.iter().map(|&a| f(a))) {
                assert!(same(g, w), "{op:?}: {g} vs {w}");
            }
            // float32 stays float32, computed in float32.
            let v32: Vec<f32> = v.iter().map(|&a| a as f32).collect();
            let y32 = t(&v32, chunk).unary_op(op).unwrap();
            assert_eq!(y32.dtype(), DType::F32);
            for (g, &a) in got::<f32>(&s, &y32).into_iter().zip(&v32) {
                let w = f(a as f64) as f32;
                // f32's own functions may differ from f64's rounded by one ulp.
                let ok = g.to_bits() == w.to_bits()
                    || (g.is_nan() && w.is_nan())
                    || (g - w).abs() <= 2.0 * f32::EPSILON * w.abs().max(1e-30);
                assert!(ok, "{op:?} float32: {g} vs {w}");
            }
        }
    }
    // Sign: -0.0 gives +0.0, NaN stays NaN (numpy's).
    let sg = got::<f64>(&s, &t(&[-3.0, -0.0, 0.0, 2.5, f64::NAN], 2).unary_op(UnOp::Sign).unwrap());
    assert!(same(sg[0], -1.0) && same(sg[1], 0.0) && same(sg[2], 0.0) && same(sg[3], 1.0) && sg[4].is_nan());
    // Tests of each element.
    let special = t(&[1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, -f64::NAN], 4);
    let test = |op| got::<bool>(&s, &special.unary_op(op).unwrap());
    assert_eq!(test(UnOp::IsNan), [false, true, false, false, false, true]);
    assert_eq!(test(UnOp::IsInf), [false, false, true, true, false, false]);
    assert_eq!(test(UnOp::IsFinite), [true, false, false, false, true, false]);
    assert_eq!(test(UnOp::SignBit), [false, false, false, true, true, true]);
    // Functions of two arguments.
    let (a, b) = (vec![1.0, -2.0, 0.0, -0.0, 3.0, 1e300], vec![2.0, 0.5, -1.0, 1.0, -4.0, 1e300]);
    let (ta, tb) = (t(&a, 4), t(&b, 3));
    type F2 = fn(f64, f64) -> f64;
    let lae: F2 = |x, y| if x == y { x + std::f64::consts::LN_2 } else { x.max(y) + (-(x - y).abs()).exp().ln_1p() };
    for (op, f) in [
        (BinOp::Atan2, f64::atan2 as F2),
        (BinOp::Hypot, f64::hypot),
        (BinOp::CopySign, f64::copysign),
        (BinOp::LogAddExp, lae),
    ] {
        let y = got::<f64>(&s, &ta.binary(op, &tb).unwrap());
        for ((g, &x), &z) in y.iter().zip(&a).zip(&b) {
            assert!(same(*g, f(x, z)), "{op:?}({x}, {z}): {g} vs {}", f(x, z));
        }
    }
    assert_eq!(got::<f64>(&s, &t(&[1.0], 1).binary(BinOp::Hypot, &t(&[1e308], 1)).unwrap()), [1e308], "no overflow");
    ares::shutdown();
}

#[test]
fn integer_functions_stay_exact_in_their_dtype() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let v: Vec<i8> = vec![i8::MIN, -7, -1, 0, 1, 7, i8::MAX];
    let x = t(&v, 3);
    for op in [UnOp::Floor, UnOp::Ceil, UnOp::Trunc, UnOp::Positive] {
        let y = x.unary_op(op).unwrap();
        assert_eq!((y.dtype(), got::<i8>(&s, &y)), (DType::I8, v.clone()), "{op:?}");
    }
    assert_eq!(got::<i8>(&s, &x.unary_op(UnOp::Sign).unwrap()), [-1, -1, -1, 0, 1, 1, 1]);
    let sq: Vec<i8> = v.iter().map(|a| a.wrapping_mul(*a)).collect();
    assert_eq!(got::<i8>(&s, &x.unary_op(UnOp::Square).unwrap()), sq);
    assert_eq!(got::<i8>(&s, &x.unary_op(UnOp::Invert).unwrap()), v.iter().map(|a| !a).collect::<Vec<_>>());
    assert_eq!(got::<bool>(&s, &x.unary_op(UnOp::IsNan).unwrap()), vec![false; 7]);
    assert_eq!(got::<bool>(&s, &x.unary_op(UnOp::SignBit).unwrap()), [true, true, true, false, false, false, false]);
    // Float functions of integers compute in floats: 16-bit ones in float32.
    assert_eq!(t(&[1i16], 1).unary_op(UnOp::Tan).unwrap().dtype(), DType::F32);
    assert_eq!(t(&[1i64], 1).unary_op(UnOp::Log2).unwrap().dtype(), DType::F64);
    assert_eq!(got::<f64>(&s, &t(&[8u32], 1).unary_op(UnOp::Log2).unwrap()), [3.0]);
    // Bitwise operations and shifts, counts at and past the width as numpy defines them.
    let (p, q) = (t(&[12u8, 255, 1, 128, 3], 2), t(&[10u8, 1, 7, 8, 200], 3));
    assert_eq!(got::<u8>(&s, &p.binary(BinOp::BitAnd, &q).unwrap()), [8, 1, 1, 0, 0]);
    assert_eq!(got::<u8>(&s, &p.binary(BinOp::BitOr, &q).unwrap()), [14, 255, 7, 136, 203]);
    assert_eq!(got::<u8>(&s, &p.binary(BinOp::BitXor, &q).unwrap()), [6, 254, 6, 136, 203]);
    assert_eq!(got::<u8>(&s, &p.binary(BinOp::Shl, &q).unwrap()), [0, 254, 128, 0, 0]);
    assert_eq!(got::<u8>(&s, &p.binary(BinOp::Shr, &q).unwrap()), [0, 127, 0, 0, 0]);
    let (m, n) = (t(&[-8i64, -8, 8, 1], 2), t(&[1i64, 64, -1, 63], 2));
    assert_eq!(got::<i64>(&s, &m.binary(BinOp::Shr, &n).unwrap()), [-4, -1, 0, 0]);
    assert_eq!(got::<i64>(&s, &m.binary(BinOp::Shl, &n).unwrap()), [-16, 0, 0, i64::MIN]);
    // Booleans: logical bitwise operations stay booleans; shifts and squares are int8.
    let (bt, bf) = (t(&[true, true, false], 2), t(&[true, false, false], 2));
    assert_eq!(got::<bool>(&s, &bt.binary(BinOp::BitXor, &bf).unwrap()), [false, true, false]);
    assert_eq!(bt.binary(BinOp::Shl, &bf).unwrap().dtype(), DType::I8);
    assert_eq!(bt.unary_op(UnOp::Square).unwrap().dtype(), DType::I8);
    assert_eq!(got::<bool>(&s, &bt.unary_op(UnOp::Invert).unwrap()), [false, false, true]);
    // What numpy refuses, refused when built.
    let f = t(&[1.0f64], 1);
    assert!(matches!(f.binary(BinOp::BitAnd, &f), Err(TensorError::BadDType { .. })));
    assert!(matches!(f.unary_op(UnOp::Invert), Err(TensorError::BadDType { .. })));
    assert!(matches!(bt.unary_op(UnOp::Sign), Err(TensorError::BadDType { .. })));
    ares::shutdown();
}

#[test]
fn where_aligns_three_operands_chunked_differently() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let arr = |shape: &[usize], v: Vec<f64>, chunks: &[usize]| {
        from_array(&ArrayD::from_shape_vec(IxDyn(shape), v).unwrap(), chunks).unwrap()
    };
    // `y` is both the condition's operand and a value, broadcast against `x` chunked
    // otherwise: each pair unified alone used to undo the other's rechunk.
    for (xc, yc) in [([1, 2], [1]), ([1, 1], [2]), ([1, 1], [1]), ([1, 2], [2])] {
        let x = arr(&[1, 2], vec![0.0, 1.0], &xc);
        let y = arr(&[2], vec![0.0, 1.0], &yc);
        let w = ares_tensor::where_(&y.gt_scalar(0.0), &y, &x).unwrap();
        assert_eq!(got::<f64>(&s, &w), [0.0, 1.0], "x chunks {xc:?}, y chunks {yc:?}");
    }
    // Three operands of three shapes, none of them the broadcast shape.
    let c = arr(&[3, 1], vec![1.0, 0.0, 1.0], &[2, 1]);
    let a = arr(&[3, 1], vec![10.0, 20.0, 30.0], &[1, 1]);
    let b = arr(&[1, 4], vec![1.0, 2.0, 3.0, 4.0], &[1, 3]);
    let w = ares_tensor::where_(&c.gt_scalar(0.0), &a, &b).unwrap();
    assert_eq!(got::<f64>(&s, &w), [10.0, 10.0, 10.0, 10.0, 1.0, 2.0, 3.0, 4.0, 30.0, 30.0, 30.0, 30.0]);
}
