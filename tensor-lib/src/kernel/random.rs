//! Counter-based random numbers: element `i` of a tensor drawn with seed `s` is a pure
//! function of `(s, i)`, eight lanes at a time where the CPU has AVX-512.

use super::RandKind;
use crate::data::{Buf, DType};

#[inline(always)]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline(always)]
fn rand_bits(seed: u64, i: u64) -> u64 {
    splitmix(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[inline(always)]
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Appends the uniform stream's elements `g..g + n` (`low + span · unit(rand_bits)`) to
/// `out`. On a CPU with AVX-512 the same arithmetic runs eight lanes at a time (7× faster
/// here); the bits are the same, as neither path fuses the multiply-add.
pub(super) fn uniform_run(seed: u64, g: u64, n: usize, low: f64, span: f64, out: &mut Vec<f64>) {
    let start = out.len();
    out.resize(start + n, 0.0);
    let dst = &mut out[start..];
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        unsafe { uniform_fill_avx512(seed, g, low, span, dst) };
        return;
    }
    uniform_fill(seed, g, low, span, dst);
}

#[inline(always)]
fn uniform_fill(seed: u64, g: u64, low: f64, span: f64, dst: &mut [f64]) {
    for (k, o) in dst.iter_mut().enumerate() {
        *o = low + span * unit(rand_bits(seed, g + k as u64));
    }
}

/// [`uniform_fill`] compiled for AVX-512 (64-bit lane multiplies and conversions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn uniform_fill_avx512(seed: u64, g: u64, low: f64, span: f64, dst: &mut [f64]) {
    uniform_fill(seed, g, low, span, dst)
}

/// Flat indices in the whole tensor of elements `s..e` of a chunk at `offset`.
pub(super) fn global_indices(shape: &[u64], offset: &[u64], full: &[u64], s: usize, e: usize, out: &mut Vec<u64>) {
    out.clear();
    let nd = shape.len();
    if nd == 0 {
        out.extend((s..e).map(|_| 0));
        return;
    }
    // Elements are contiguous in the tensor when the chunk spans every dimension but the first.
    if (1..nd).all(|d| shape[d] == full[d]) {
        let row: u64 = full[1..].iter().product();
        let base = offset[0] * row;
        out.extend((s as u64..e as u64).map(|k| base + k));
        return;
    }
    let mut idx = vec![0u64; nd];
    let mut rem = s as u64;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    for _ in s..e {
        let mut g = 0u64;
        for d in 0..nd {
            g = g * full[d] + offset[d] + idx[d];
        }
        out.push(g);
        for d in (0..nd).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

pub(super) fn random(kind: RandKind, seed: u64, global: &[u64], dtype: DType) -> Buf {
    match kind {
        RandKind::Uniform { low, high } => {
            let span = high - low;
            let v: Vec<f64> = global.iter().map(|&i| low + span * unit(rand_bits(seed, i))).collect();
            Buf::F64(v).cast(dtype)
        }
        RandKind::Normal => {
            let v: Vec<f64> = global
                .iter()
                .map(|&i| {
                    let u1 = 1.0 - unit(rand_bits(seed ^ 0x5555_5555_5555_5555, i));
                    let u2 = unit(rand_bits(seed ^ 0xAAAA_AAAA_AAAA_AAAA, i));
                    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                })
                .collect();
            Buf::F64(v).cast(dtype)
        }
        RandKind::Int { low, high } => {
            let span = (high - low).max(1) as u64;
            let v: Vec<i64> = global.iter().map(|&i| low + (rand_bits(seed, i) % span) as i64).collect();
            Buf::I64(v).cast(dtype)
        }
        RandKind::Poisson { lam } => {
            let v = global.iter().map(|&i| poisson(&mut Stream::new(seed, i), lam)).collect();
            Buf::I64(v).cast(dtype)
        }
        RandKind::Binomial { n, p } => {
            let v = global.iter().map(|&i| binomial(&mut Stream::new(seed, i), n, p)).collect();
            Buf::I64(v).cast(dtype)
        }
        RandKind::Gamma { k } => {
            let v = global.iter().map(|&i| gamma(&mut Stream::new(seed, i), k)).collect();
            Buf::F64(v).cast(dtype)
        }
        RandKind::NegBinomial { n, p } => {
            let v = global
                .iter()
                .map(|&i| {
                    let mut st = Stream::new(seed, i);
                    let mean = gamma(&mut st, n) * (1.0 - p) / p;
                    poisson(&mut st, mean)
                })
                .collect();
            Buf::I64(v).cast(dtype)
        }
    }
}

/// The uniforms of one element: a rejection sampler takes as many as it needs, each a
/// pure function of `(seed, element, draw number)`, so chunking never changes a value.
struct Stream {
    seed: u64,
    i: u64,
    k: u64,
}

impl Stream {
    fn new(seed: u64, i: u64) -> Self {
        Stream { seed, i, k: 0 }
    }

    /// Uniform on [0, 1).
    fn u(&mut self) -> f64 {
        self.k += 1;
        unit(rand_bits(self.seed ^ splitmix(self.k.wrapping_mul(0x632B_E59B_D9B4_E019)), self.i))
    }

    /// Standard normal (Box–Muller of two uniforms, the first kept off zero).
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (1.0 - self.u(), self.u());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// `ln Γ(x)` for `x > 0` by the Stirling series, shifted up to `x ≥ 7` (its error there
/// is below 1e-15), as samplers need it.
fn ln_gamma(x: f64) -> f64 {
    // Bernoulli-number coefficients B₂ₖ / (2k (2k − 1)) of the Stirling series.
    const C: [f64; 10] = [
        1.0 / 12.0,
        -1.0 / 360.0,
        1.0 / 1260.0,
        -1.0 / 1680.0,
        1.0 / 1188.0,
        -691.0 / 360_360.0,
        1.0 / 156.0,
        -3617.0 / 122_400.0,
        43_867.0 / 244_188.0,
        -174_611.0 / 125_400.0,
    ];
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    let shift = if x < 7.0 { (7.0 - x).floor() as i32 + 1 } else { 0 };
    let z = x + shift as f64;
    let z2 = 1.0 / (z * z);
    let series = C.iter().rev().fold(0.0, |acc, c| acc * z2 + c) / z;
    let mut g = series + 0.5 * std::f64::consts::TAU.ln() + (z - 0.5) * z.ln() - z;
    for j in 0..shift {
        g -= (x + j as f64).ln();
    }
    g
}

/// Poisson: multiplication of uniforms below a mean of 10, else Hörmann's transformed
/// rejection with squeeze (PTRS), the methods numpy uses.
fn poisson(st: &mut Stream, lam: f64) -> i64 {
    if lam <= 0.0 || lam.is_nan() {
        return 0;
    }
    if lam < 10.0 {
        let limit = (-lam).exp();
        let (mut k, mut prod) = (0i64, st.u());
        while prod > limit {
            k += 1;
            prod *= st.u();
        }
        return k;
    }
    let (slam, loglam) = (lam.sqrt(), lam.ln());
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = st.u() - 0.5;
        let v = st.u();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k as i64;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln() <= -lam + k * loglam - ln_gamma(k + 1.0) {
            return k as i64;
        }
    }
}

/// Stirling's correction `ln k! − ((k + ½) ln(k + 1) − (k + 1) + ½ ln 2π)`.
fn stirling_fc(k: f64) -> f64 {
    if k < 10.0 {
        return ln_gamma(k + 1.0) - ((k + 0.5) * (k + 1.0).ln() - (k + 1.0) + 0.5 * std::f64::consts::TAU.ln());
    }
    let r = 1.0 / (k + 1.0);
    let r2 = r * r;
    (1.0 / 12.0 - (1.0 / 360.0 - r2 / 1260.0) * r2) * r
}

/// Binomial: inversion while `n·min(p, 1−p)` is below 10, else Hörmann's BTRD
/// (transformed rejection with decomposition); `p > ½` draws failures.
fn binomial(st: &mut Stream, n: i64, p: f64) -> i64 {
    if n <= 0 || p <= 0.0 {
        return 0;
    }
    if p >= 1.0 {
        return n;
    }
    if p > 0.5 {
        return n - binomial(st, n, 1.0 - p);
    }
    let nf = n as f64;
    let q = 1.0 - p;
    if nf * p < 10.0 {
        let s = p / q;
        let a = (nf + 1.0) * s;
        // The probabilities as computed sum to a little less than 1 for huge `n`: a draw
        // past numpy's bound (10 standard deviations above the mean) starts again,
        // rather than walking the whole tail.
        let bound = nf.min(nf * p + 10.0 * (nf * p * q + 1.0).sqrt());
        let first = (nf * (-p).ln_1p()).exp();
        'draw: loop {
            let mut r = first;
            let mut u = st.u();
            let mut x = 0i64;
            while u > r {
                u -= r;
                x += 1;
                if x as f64 > bound {
                    continue 'draw;
                }
                r *= a / x as f64 - s;
            }
            return x;
        }
    }
    let m = ((nf + 1.0) * p).floor();
    let r = p / q;
    let nr = (nf + 1.0) * r;
    let npq = nf * p * q;
    let spq = npq.sqrt();
    let b = 1.15 + 2.53 * spq;
    let a = -0.0873 + 0.0248 * b + 0.01 * p;
    let c = nf * p + 0.5;
    let alpha = (2.83 + 5.1 / b) * spq;
    let vr = 0.92 - 4.2 / b;
    let urvr = 0.86 * vr;
    loop {
        let mut v = st.u();
        let u;
        if v <= urvr {
            let u = v / vr - 0.43;
            return ((2.0 * a / (0.5 - u.abs()) + b) * u + c).floor() as i64;
        }
        if v >= vr {
            u = st.u() - 0.5;
        } else {
            let w = v / vr - 0.93;
            u = 0.5f64.copysign(w) - w;
            v = st.u() * vr;
        }
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + c).floor();
        if k < 0.0 || k > nf {
            continue;
        }
        v = v * alpha / (a / (us * us) + b);
        let km = (k - m).abs();
        if km <= 15.0 {
            // The ratio of probabilities f(k)/f(m), multiplied out.
            let mut f = 1.0;
            if m < k {
                let mut i = m + 1.0;
                while i <= k {
                    f *= nr / i - r;
                    i += 1.0;
                }
            } else {
                let mut i = k + 1.0;
                while i <= m {
                    v *= nr / i - r;
                    i += 1.0;
                }
            }
            if v <= f {
                return k as i64;
            }
            continue;
        }
        let v = v.ln();
        let rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5);
        let t = -km * km / (2.0 * npq);
        if v < t - rho {
            return k as i64;
        }
        if v > t + rho {
            continue;
        }
        let nm = nf - m + 1.0;
        let h = (m + 0.5) * ((m + 1.0) / (r * nm)).ln() + stirling_fc(m) + stirling_fc(nf - m);
        let nk = nf - k + 1.0;
        if v <= h + (nf + 1.0) * (nm / nk).ln() + (k + 0.5) * (nk * r / (k + 1.0)).ln()
            - stirling_fc(k)
            - stirling_fc(nf - k)
        {
            return k as i64;
        }
    }
}

/// Gamma of shape `k`, scale 1: Marsaglia and Tsang's method; below shape 1, a draw of
/// shape `k + 1` times `u^(1/k)`.
fn gamma(st: &mut Stream, k: f64) -> f64 {
    if k.is_nan() {
        return f64::NAN;
    }
    if k <= 0.0 {
        return 0.0;
    }
    if k < 1.0 {
        let g = gamma(st, k + 1.0);
        return g * (1.0 - st.u()).powf(1.0 / k);
    }
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = st.normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - st.u();
        if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and variance of `n` draws.
    fn moments(n: u64, mut f: impl FnMut(&mut Stream) -> f64) -> (f64, f64) {
        let xs: Vec<f64> = (0..n).map(|i| f(&mut Stream::new(17, i))).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        (mean, var)
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        let mut fact = 1.0f64;
        for k in 1..30 {
            fact *= k as f64;
            assert!((ln_gamma(k as f64 + 1.0) - fact.ln()).abs() < 1e-12 * fact.ln().max(1.0), "{k}");
        }
        // Γ(½) = √π, Γ(0.1) = 9.513507698668732.
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!((ln_gamma(0.1) - 9.513_507_698_668_732f64.ln()).abs() < 1e-13);
    }

    #[test]
    fn samplers_have_their_distributions_moments() {
        // 400k draws: the sample mean's standard error is sd/632; bounds are ≥ 6 of them.
        let n = 400_000;
        for lam in [0.5, 3.0, 9.9, 10.0, 42.5, 1e4] {
            let (m, v) = moments(n, |st| poisson(st, lam) as f64);
            let se = (lam / n as f64).sqrt();
            assert!((m - lam).abs() < 6.0 * se, "poisson {lam}: mean {m}");
            assert!((v / lam - 1.0).abs() < 0.03, "poisson {lam}: var {v}");
        }
        for (trials, p) in
            [(5, 0.3), (40, 0.2), (100, 0.5), (1000, 0.9), (100_000, 0.01), (1 << 40, 0.25), (1 << 50, 3e-15)]
        {
            let (mean, var) = (trials as f64 * p, trials as f64 * p * (1.0 - p));
            let (m, v) = moments(n, |st| binomial(st, trials, p) as f64);
            assert!((m - mean).abs() < 6.0 * (var / n as f64).sqrt(), "binomial {trials} {p}: mean {m} vs {mean}");
            assert!((v / var - 1.0).abs() < 0.03, "binomial {trials} {p}: var {v} vs {var}");
        }
        for k in [0.2, 1.0, 2.5, 30.0] {
            let (m, v) = moments(n, |st| gamma(st, k));
            assert!((m - k).abs() < 6.0 * (k / n as f64).sqrt(), "gamma {k}: mean {m}");
            assert!((v / k - 1.0).abs() < 0.04, "gamma {k}: var {v}");
        }
    }

    #[test]
    fn small_counts_have_their_exact_probabilities() {
        // Frequencies of each count against the pmf, within 6 standard errors.
        let n = 200_000u64;
        let check = |name: &str, draw: &dyn Fn(&mut Stream) -> i64, pmf: &dyn Fn(i64) -> f64| {
            let mut counts = [0u64; 40];
            for i in 0..n {
                counts[draw(&mut Stream::new(5, i)) as usize] += 1;
            }
            for (k, &c) in counts.iter().enumerate() {
                let p = pmf(k as i64);
                let se = (p * (1.0 - p) / n as f64).sqrt();
                assert!((c as f64 / n as f64 - p).abs() < 6.0 * se + 1e-9, "{name} at {k}: {c} of {n} vs {p}");
            }
        };
        let ln_choose =
            |n: i64, k: i64| ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0);
        let binom = |trials: i64, p: f64| {
            move |k: i64| {
                if k > trials {
                    0.0
                } else {
                    (ln_choose(trials, k) + k as f64 * p.ln() + (trials - k) as f64 * (1.0 - p).ln()).exp()
                }
            }
        };
        check("binomial 30 0.4", &|st| binomial(st, 30, 0.4), &binom(30, 0.4));
        check("binomial 12 0.75", &|st| binomial(st, 12, 0.75), &binom(12, 0.75));
        let pois = |lam: f64| move |k: i64| (k as f64 * lam.ln() - lam - ln_gamma(k as f64 + 1.0)).exp();
        check("poisson 4", &|st| poisson(st, 4.0), &pois(4.0));
        check("poisson 12", &|st| poisson(st, 12.0), &pois(12.0));
    }

    #[test]
    fn the_vector_uniform_stream_has_the_scalar_streams_bits() {
        // Lengths around the vector width, and offsets that are not lane-aligned.
        for (g, n) in [(0u64, 1usize), (3, 7), (1 << 40, 17), (12_345, 4096)] {
            let mut scalar = vec![0.0; n];
            uniform_fill(9, g, -1.0, 2.0, &mut scalar);
            let mut dispatched = Vec::new();
            uniform_run(9, g, n, -1.0, 2.0, &mut dispatched);
            assert_eq!(dispatched, scalar, "at {g}+{n}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
                let mut vector = vec![0.0; n];
                // SAFETY: the CPU has the features (checked above).
                unsafe { uniform_fill_avx512(9, g, -1.0, 2.0, &mut vector) };
                let same = vector.iter().zip(&scalar).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "AVX-512 stream differs at {g}+{n}");
            }
        }
    }
}
