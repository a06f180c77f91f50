//! Discrete Fourier transforms of the lanes of a chunk along one axis (rustfft), the
//! kernel of `numpy.fft`: the tiling holds the axis whole in each chunk, so a lane is
//! never split. complex64 transforms in float32 and complex128 in float64, as numpy 2.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

use crate::data::{Buf, C64, C128};

/// Which transform a [`super::Node::Fft`] computes.
#[derive(Clone, Copy, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub enum FftKind {
    /// `X[k] = Σ x[j] e^(-2πijk/n)`.
    Forward,
    /// `x[j] = Σ X[k] e^(2πijk/n)` (unscaled: the node's `scale` divides).
    Inverse,
    /// The real signals of `n` elements whose half spectra (the first `n/2 + 1`
    /// coefficients) the lanes hold: numpy's `irfft` (unscaled, as `Inverse`).
    RealInverse {
        /// Elements of each output lane.
        n: u64,
    },
}

/// Strided lanes are transformed this many at a time: gathered into a contiguous
/// scratch (`len × LANES` elements, a few MiB at most for the lengths numpy users
/// transform), transformed in one call, and put back, so the scratch stays in cache
/// and no whole-block transpose is ever allocated.
const LANES: usize = 16;

/// The transform of each lane of `x` (laid out `outer × len × inner`, complex) along
/// its middle axis, every output element times `scale`; a real inverse gives lanes of
/// `n` real elements.
pub(super) fn fft_lanes(x: Buf, kind: FftKind, outer: usize, len: usize, inner: usize, scale: f64) -> Buf {
    match x {
        Buf::C64(mut v) => match lanes(as_num_complex_f32(&mut v), kind, outer, len, inner, scale as f32) {
            Some(real) => Buf::F32(real),
            None => Buf::C64(v),
        },
        Buf::C128(mut v) => match lanes(as_num_complex_f64(&mut v), kind, outer, len, inner, scale) {
            Some(real) => Buf::F64(real),
            None => Buf::C128(v),
        },
        other => unreachable!("the tiling casts an FFT's operand to complex, not {:?}", other.dtype()),
    }
}

macro_rules! as_num_complex {
    ($name:ident, $ours:ty, $t:ty) => {
        /// Our complex elements seen as rustfft's, in place.
        fn $name(v: &mut [$ours]) -> &mut [Complex<$t>] {
            const _: () = assert!(
                size_of::<$ours>() == size_of::<Complex<$t>>() && align_of::<$ours>() == align_of::<Complex<$t>>()
            );
            // SAFETY: both types are `repr(C)` structs of two `$t` (real part, then
            // imaginary part), of the same size and alignment (checked above); every bit
            // pattern is valid for both, and the borrow of `v` covers the new slice.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<Complex<$t>>(), v.len()) }
        }
    };
}
as_num_complex!(as_num_complex_f32, C64, f32);
as_num_complex!(as_num_complex_f64, C128, f64);

/// Transforms the lanes of `v` in place; a real inverse returns its real lanes instead.
fn lanes<T: rustfft::FftNum>(
    v: &mut [Complex<T>],
    kind: FftKind,
    outer: usize,
    len: usize,
    inner: usize,
    scale: T,
) -> Option<Vec<T>> {
    let mut planner = FftPlanner::<T>::new();
    if let FftKind::RealInverse { n } = kind {
        let n = n as usize;
        let plan = planner.plan_fft_inverse(n);
        let mut out = vec![T::zero(); outer * n * inner];
        let mut lane = vec![Complex::new(T::zero(), T::zero()); n];
        for o in 0..outer {
            for i in 0..inner {
                // The whole spectrum from its half: X[n - k] = conj(X[k]).
                for (k, c) in lane.iter_mut().enumerate() {
                    let (src, flip) = if k <= n / 2 { (k, false) } else { (n - k, true) };
                    let z = if src < len { v[(o * len + src) * inner + i] } else { Complex::new(T::zero(), T::zero()) };
                    *c = if flip { z.conj() } else { z };
                }
                if n > 0 {
                    plan.process(&mut lane);
                }
                for (j, c) in lane.iter().enumerate() {
                    out[(o * n + j) * inner + i] = c.re * scale;
                }
            }
        }
        return Some(out);
    }
    if len == 0 || v.is_empty() {
        return None;
    }
    let plan = match kind {
        FftKind::Forward => planner.plan_fft_forward(len),
        _ => planner.plan_fft_inverse(len),
    };
    let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
    if inner == 1 {
        // Contiguous lanes: one call transforms them all.
        plan.process_with_scratch(v, &mut scratch);
        if scale != T::one() {
            v.iter_mut().for_each(|z| *z = *z * scale);
        }
        return None;
    }
    let mut t = vec![Complex::new(T::zero(), T::zero()); len * LANES.min(inner)];
    for o in 0..outer {
        let block = &mut v[o * len * inner..(o + 1) * len * inner];
        for c0 in (0..inner).step_by(LANES) {
            let w = LANES.min(inner - c0);
            for (r, row) in block.chunks_exact(inner).enumerate() {
                for (c, &z) in row[c0..c0 + w].iter().enumerate() {
                    t[c * len + r] = z;
                }
            }
            plan.process_with_scratch(&mut t[..w * len], &mut scratch);
            for (r, row) in block.chunks_exact_mut(inner).enumerate() {
                for (c, z) in row[c0..c0 + w].iter_mut().enumerate() {
                    *z = t[c * len + r] * scale;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[C128], sign: f64) -> Vec<C128> {
        let n = x.len();
        (0..n)
            .map(|k| {
                let mut acc = C128::default();
                for (j, z) in x.iter().enumerate() {
                    let a = sign * 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                    let (s, c) = a.sin_cos();
                    acc = C128::new(acc.re + z.re * c - z.im * s, acc.im + z.re * s + z.im * c);
                }
                acc
            })
            .collect()
    }

    #[test]
    fn strided_and_contiguous_lanes_match_the_definition() {
        // A 3 × 5 × 20 block: 20 strided lanes (more than a batch) of length 5 each.
        let (outer, len, inner) = (3, 5, 20);
        let x: Vec<C128> =
            (0..outer * len * inner).map(|i| C128::new((i as f64 * 0.37).sin(), (i % 7) as f64 - 3.0)).collect();
        let Buf::C128(got) = fft_lanes(Buf::C128(x.clone()), FftKind::Forward, outer, len, inner, 1.0) else {
            panic!("complex out")
        };
        for o in 0..outer {
            for i in 0..inner {
                let lane: Vec<C128> = (0..len).map(|k| x[(o * len + k) * inner + i]).collect();
                for (k, want) in naive(&lane, -1.0).iter().enumerate() {
                    let g = got[(o * len + k) * inner + i];
                    assert!((g.re - want.re).abs() < 1e-9 && (g.im - want.im).abs() < 1e-9, "{g:?} vs {want:?}");
                }
            }
        }
        // The inverse, scaled by 1/n, gives the lanes back.
        let Buf::C128(back) = fft_lanes(Buf::C128(got), FftKind::Inverse, outer, len, inner, 1.0 / len as f64) else {
            panic!("complex out")
        };
        for (a, b) in back.iter().zip(&x) {
            assert!((a.re - b.re).abs() < 1e-12 && (a.im - b.im).abs() < 1e-12);
        }
    }

    #[test]
    fn a_real_inverse_rebuilds_the_signal_from_half_its_spectrum() {
        for n in [1usize, 2, 7, 8] {
            let signal: Vec<f64> = (0..n).map(|j| (j as f64 * 1.3).cos() + j as f64).collect();
            let spectrum = naive(&signal.iter().map(|&r| C128::new(r, 0.0)).collect::<Vec<_>>(), -1.0);
            let half = spectrum[..n / 2 + 1].to_vec();
            let m = half.len();
            let Buf::F64(got) =
                fft_lanes(Buf::C128(half), FftKind::RealInverse { n: n as u64 }, 1, m, 1, 1.0 / n as f64)
            else {
                panic!("real out")
            };
            for (g, w) in got.iter().zip(&signal) {
                assert!((g - w).abs() < 1e-9, "n={n}: {got:?} vs {signal:?}");
            }
        }
    }
}
