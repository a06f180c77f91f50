//! Every integer dtype (int8–int64, uint8–uint64) through tensors on a real embedded
//! cluster, against oracles computed here with the type's own wrapping arithmetic, at
//! its extremes and under uneven chunkings: numpy's results to the bit.

use ares_tensor::{DType, Elem, ReduceOp, Session, Tensor, from_array};
use ndarray::{ArrayD, IxDyn};

fn t<T: Elem>(v: &[T], chunk: usize) -> Tensor {
    from_array(&ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap(), &[chunk]).unwrap()
}

fn got<T: Elem>(s: &Session, x: &Tensor) -> Vec<T> {
    x.fetch::<T>(s).unwrap().iter().copied().collect()
}

macro_rules! check_int {
    ($s:expr, $t:ty, $d:ident, $signed:expr) => {{
        let s = $s;
        let (lo, hi) = (<$t>::MIN, <$t>::MAX);
        let x: Vec<$t> = vec![lo, hi, 0, 1, 7, hi / 3, lo / 5 + 3, 100, 2, hi - 1, 13];
        let y: Vec<$t> =
            vec![1, 2, 3, hi, 5, 2, 3, 0, 1, lo / 7 + 1, if $signed { (0 as $t).wrapping_sub(4) } else { 4 }];
        for chunk in [1, 3, 4, 11] {
            let (a, b) = (t(&x, chunk), t(&y, chunk + 1));
            assert_eq!(a.dtype(), DType::$d);
            let zip = |f: fn($t, $t) -> $t| x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect::<Vec<$t>>();
            assert_eq!(got::<$t>(&s, &(&a + &b)), zip(<$t>::wrapping_add), "{} +", stringify!($t));
            assert_eq!(got::<$t>(&s, &(&a - &b)), zip(<$t>::wrapping_sub), "{} -", stringify!($t));
            assert_eq!(got::<$t>(&s, &(&a * &b)), zip(<$t>::wrapping_mul), "{} *", stringify!($t));
            // Python's floor division and remainder; numpy gives 0 for a zero divisor.
            let floor = |p: $t, q: $t| -> $t {
                if q == 0 {
                    return 0;
                }
                let (d, r) = (p.wrapping_div(q), p.wrapping_rem(q));
                if r != 0 && ((r < (0 as $t)) != (q < (0 as $t))) { d.wrapping_sub(1) } else { d }
            };
            let modulo = |p: $t, q: $t| -> $t {
                if q == 0 {
                    return 0;
                }
                let r = p.wrapping_rem(q);
                if r != 0 && ((r < (0 as $t)) != (q < (0 as $t))) { r.wrapping_add(q) } else { r }
            };
            assert_eq!(got::<$t>(&s, &a.floor_divide(&b).unwrap()), zip(floor), "{} //", stringify!($t));
            assert_eq!(got::<$t>(&s, &(&a % &b)), zip(modulo), "{} %", stringify!($t));
            assert_eq!(got::<$t>(&s, &a.maximum(&b).unwrap()), zip(|p, q| p.max(q)), "{} maximum", stringify!($t));
            let lt: Vec<bool> = x.iter().zip(&y).map(|(p, q)| p < q).collect();
            assert_eq!(got::<bool>(&s, &a.lt(&b).unwrap()), lt, "{} <", stringify!($t));
            // Sums in the 64-bit integer of the kind (numpy's), wrapping.
            let sum = a.reduce(ReduceOp::Sum, None, false).unwrap();
            if $signed {
                assert_eq!(sum.dtype(), DType::I64);
                let want = x.iter().fold(0i64, |acc, &v| acc.wrapping_add(v as i64));
                assert_eq!(got::<i64>(&s, &sum), vec![want]);
            } else {
                assert_eq!(sum.dtype(), DType::U64);
                let want = x.iter().fold(0u64, |acc, &v| acc.wrapping_add(v as u64));
                assert_eq!(got::<u64>(&s, &sum), vec![want]);
            }
            let max = a.reduce(ReduceOp::Max, None, false).unwrap();
            assert_eq!((max.dtype(), got::<$t>(&s, &max)), (DType::$d, vec![hi]));
            let argmin = a.reduce(ReduceOp::ArgMin, Some(&[0]), false).unwrap();
            let want = x.iter().enumerate().min_by_key(|(_, v)| **v).map(|(i, _)| i as i64).unwrap();
            assert_eq!(got::<i64>(&s, &argmin), vec![want]);
        }
    }};
}

#[test]
fn every_integer_dtype_computes_exactly_at_its_extremes() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    check_int!(&s, i8, I8, true);
    check_int!(&s, i16, I16, true);
    check_int!(&s, i32, I32, true);
    check_int!(&s, i64, I64, true);
    check_int!(&s, u8, U8, false);
    check_int!(&s, u16, U16, false);
    check_int!(&s, u32, U32, false);
    check_int!(&s, u64, U64, false);
    ares::shutdown();
}

#[test]
fn mixed_integer_dtypes_promote_as_numpy_and_cast_exactly() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let a = t(&[200u8, 255, 0], 2);
    let b = t(&[-1i8, 127, -128], 2);
    // uint8 with int8 computes in int16 (numpy's table), exactly.
    let sum = &a + &b;
    assert_eq!(sum.dtype(), DType::I16);
    assert_eq!(got::<i16>(&s, &sum), vec![199, 382, -128]);
    // int64 with uint64 has no common integer: float64.
    let big = t(&[u64::MAX, 1], 1);
    let neg = t(&[-1i64, -2], 1);
    assert_eq!((&big + &neg).dtype(), DType::F64);
    // uint64 values past int64's range survive a cast to and from int64 (wrapping, as
    // numpy's astype), and a sum of them wraps in uint64.
    assert_eq!(got::<u64>(&s, &big.astype(DType::I64).astype(DType::U64)), vec![u64::MAX, 1]);
    assert_eq!(got::<i64>(&s, &big.astype(DType::I64)), vec![-1, 1]);
    assert_eq!(got::<u64>(&s, &big.reduce(ReduceOp::Sum, None, false).unwrap()), vec![0]);
    // Integer products accumulate exactly and wrap in the result's width.
    let m = from_array(&ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![100i8, 100, 1, 2]).unwrap(), &[1, 1]).unwrap();
    let p = m.matmul(&m).unwrap();
    assert_eq!(p.dtype(), DType::I8);
    let want: Vec<i8> = vec![(100i64 * 100 + 100).to_le_bytes()[0] as i8, (100i64 * 100 + 200) as i8, 102, 104];
    assert_eq!(got::<i8>(&s, &p), want);
    ares::shutdown();
}

#[test]
fn integer_ranges_are_exact_past_float64s_integers() {
    ares::init_with(ares::Config::default().num_cpus(2)).unwrap();
    let s = Session::new();
    let big = 1i64 << 53;
    let r = ares_tensor::arange_int(big, big + 5, 1, 2).unwrap();
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(got::<i64>(&s, &r), (big..big + 5).collect::<Vec<_>>());
    let down = ares_tensor::arange_int(i64::MAX, i64::MAX - 7, -3, 2).unwrap();
    assert_eq!(got::<i64>(&s, &down), vec![i64::MAX, i64::MAX - 3, i64::MAX - 6]);
    assert_eq!(ares_tensor::arange_int(5, 5, 1, 2).unwrap().shape(), [0]);
    assert_eq!(ares_tensor::arange_int(5, 0, 1, 2).unwrap().shape(), [0]);
    assert!(ares_tensor::arange_int(0, 5, 0, 2).is_err());
    // An int8 tensor meets a Python int it cannot hold as int64, not wrapped.
    let small = t(&[1i8, 2], 1);
    let plus = small.binary_scalar(ares_tensor::kernel::BinOp::Add, ares_tensor::Scalar::I64(300)).unwrap();
    assert_eq!(got::<i64>(&s, &plus), vec![301, 302]);
    ares::shutdown();
}
