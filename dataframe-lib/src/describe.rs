//! `describe`: pandas' summary of numeric columns (count, mean, std, min, percentiles,
//! max) with exact percentiles, found without sorting the frame.
//!
//! Two passes over the chunks. The first gives, per chunk and column, the moments and a
//! *sketch*: the chunk's sorted values at evenly spaced ranks. From the sketches alone
//! the driver finds, for every rank a percentile needs, two values that surely bracket
//! the value at that rank (the bounds below are guaranteed, not estimated). The second
//! pass counts, per chunk, the values below each bracket and returns the few inside it;
//! the driver then picks the exact order statistic and interpolates as numpy's
//! `percentile` (method "linear") does, which is what pandas calls.
//!
//! Pure functions of values (and one reading a column); `exec` runs them as tasks.

use polars::prelude::{DataFrame, DataType, PolarsResult};

/// Most sample points a chunk keeps per column: the bracket found from them spans about
/// `2 · rows / SKETCH` values of the whole frame.
pub(crate) const SKETCH: usize = 4096;

/// Sample points per chunk for a frame of `chunks` chunks: fewer as there are more, so
/// the sketches the driver gathers stay about 16 MB per column (at least 256 points).
pub(crate) fn sketch_points(chunks: usize) -> u32 {
    (2_000_000 / chunks.max(1)).clamp(256, SKETCH) as u32
}

/// What one chunk knows of one column's present values (nulls and NaN left out).
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Sketch {
    /// Values.
    pub(crate) count: u64,
    /// Their sum.
    pub(crate) sum: f64,
    /// Sum of squared deviations from the chunk's mean.
    pub(crate) m2: f64,
    /// Evenly spaced points: `values[i]` is the value of rank `i · count / points` for
    /// `i < points`, and a last one, when there is one more, that of rank `count - 1`.
    pub(crate) points: u64,
    /// The values at those ranks in sorted order.
    pub(crate) values: Vec<f64>,
}

impl Sketch {
    /// The rank of sample `i`.
    fn rank(&self, i: usize) -> u64 {
        if (i as u64) < self.points { i as u64 * self.count / self.points } else { self.count - 1 }
    }
}

/// What one chunk holds of one bracket `[lo, hi]`.
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Picked {
    /// Values `< lo`.
    pub(crate) below: u64,
    /// Values `== lo`.
    pub(crate) at_lo: u64,
    /// Values `== hi` (when `hi != lo`).
    pub(crate) at_hi: u64,
    /// The values strictly between `lo` and `hi`.
    pub(crate) inner: Vec<f64>,
}

/// Column `name` of `df` as floats, missing values as `None`.
pub(crate) fn floats(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    let s = df.column(name)?.as_materialized_series().cast(&DataType::Float64)?;
    Ok(s.f64()?.iter().collect())
}

/// The present values of a column as sorted floats (-0.0 made 0.0, so the sorted order
/// is the order `<` gives).
pub(crate) fn sorted_values(values: impl Iterator<Item = Option<f64>>) -> Vec<f64> {
    let mut v: Vec<f64> = values.flatten().filter(|x| !x.is_nan()).map(|x| x + 0.0).collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// The sketch of one chunk's sorted values, with at most `points` evenly spaced samples
/// (and the greatest value).
pub(crate) fn sketch(sorted: &[f64], points: u32) -> Sketch {
    let n = sorted.len();
    if n == 0 {
        return Sketch::default();
    }
    let sum: f64 = sorted.iter().sum();
    let mean = sum / n as f64;
    let m2 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
    let k = (points.max(1) as usize).min(n);
    let mut values: Vec<f64> = (0..k).map(|i| sorted[i * n / k]).collect();
    if (k - 1) * n / k != n - 1 {
        values.push(sorted[n - 1]);
    }
    Sketch { count: n as u64, sum, m2, points: k as u64, values }
}

/// Count, mean, and `M2` (squared deviations from the mean) of the chunks together
/// (Chan et al.'s pairwise merge).
pub(crate) fn moments(sketches: &[&Sketch]) -> (u64, f64, f64) {
    let (mut n, mut mean, mut m2) = (0u64, 0.0f64, 0.0f64);
    for s in sketches.iter().filter(|s| s.count > 0) {
        let (nb, mb) = (s.count as f64, s.sum / s.count as f64);
        let total = n as f64 + nb;
        let delta = mb - mean;
        m2 += s.m2 + delta * delta * n as f64 * nb / total;
        mean += delta * nb / total;
        n += s.count;
    }
    (n, mean, m2)
}

/// At most how many values of chunk `s` are `< v`: the rank of its first sample `>= v`.
fn most_below(s: &Sketch, v: f64) -> u64 {
    let i = s.values.partition_point(|&x| x < v);
    if i < s.values.len() { s.rank(i) } else { s.count }
}

/// At least how many values of chunk `s` are `<= v`: one more than the rank of its last
/// sample `<= v`.
fn least_up_to(s: &Sketch, v: f64) -> u64 {
    match s.values.partition_point(|&x| x <= v) {
        0 => 0,
        i => s.rank(i - 1) + 1,
    }
}

/// Every chunk's sketch of one column, and their sampled values sorted once.
pub(crate) struct Brackets<'a> {
    sketches: Vec<&'a Sketch>,
    candidates: Vec<f64>,
    count: u64,
}

impl<'a> Brackets<'a> {
    pub(crate) fn new(sketches: Vec<&'a Sketch>) -> Self {
        let mut candidates: Vec<f64> = sketches.iter().flat_map(|s| s.values.iter().copied()).collect();
        candidates.sort_unstable_by(f64::total_cmp);
        candidates.dedup();
        let count = sketches.iter().map(|s| s.count).sum();
        Brackets { sketches, candidates, count }
    }

    /// Two sampled values `lo <= hi` such that the value of rank `r` (0-based, in sorted
    /// order, over every chunk) lies in `[lo, hi]`: at most `r` values are `< lo` and at
    /// least `r + 1` are `<= hi`. `None` when the chunks hold no more than `r` values.
    pub(crate) fn bracket(&self, r: u64) -> Option<(f64, f64)> {
        if r >= self.count {
            return None;
        }
        // Both counts grow with v. The least candidate has nothing below it, and the
        // greatest has every value up to it, so both searches find one.
        let below = |v: f64| self.sketches.iter().map(|s| most_below(s, v)).sum::<u64>();
        let up_to = |v: f64| self.sketches.iter().map(|s| least_up_to(s, v)).sum::<u64>();
        let c = &self.candidates;
        let lo = c[c.partition_point(|&v| below(v) <= r) - 1];
        let hi = c[c.partition_point(|&v| up_to(v) < r + 1)];
        Some((lo, hi))
    }
}

/// What sorted (or unsorted) `values` hold of the bracket `[lo, hi]`.
pub(crate) fn pick(values: &[f64], lo: f64, hi: f64) -> Picked {
    let mut p = Picked::default();
    for &x in values {
        if x < lo {
            p.below += 1;
        } else if x == lo {
            p.at_lo += 1;
        } else if x == hi {
            p.at_hi += 1;
        } else if x < hi {
            p.inner.push(x);
        }
    }
    p
}

/// The value of rank `r` from every chunk's part of its bracket `[lo, hi]`; `None` if
/// the parts do not hold it (the bracket was wrong, which `bracket` rules out).
pub(crate) fn select(parts: &[&Picked], lo: f64, hi: f64, r: u64) -> Option<f64> {
    let below: u64 = parts.iter().map(|p| p.below).sum();
    let at_lo: u64 = parts.iter().map(|p| p.at_lo).sum();
    let at_hi: u64 = parts.iter().map(|p| p.at_hi).sum();
    let r = r.checked_sub(below)?;
    if r < at_lo {
        return Some(lo);
    }
    let mut inner: Vec<f64> = parts.iter().flat_map(|p| p.inner.iter().copied()).collect();
    let r = (r - at_lo) as usize;
    if r < inner.len() {
        inner.select_nth_unstable_by(r, f64::total_cmp);
        return Some(inner[r]);
    }
    (((r - inner.len()) as u64) < at_hi).then_some(hi)
}

/// The ranks numpy's linear percentile reads for fraction `q` of `n` values: the two
/// neighbours of `q · (n - 1)` and the weight of the upper one.
pub(crate) fn percentile_ranks(q: f64, n: u64) -> (u64, u64, f64) {
    // pandas hands numpy `100 q`, which divides it by 100 again: the same fraction to
    // the last bit.
    let q = q * 100.0 / 100.0;
    let pos = q * (n - 1) as f64;
    let lo = pos.floor();
    let t = pos - lo;
    let lo = (lo as u64).min(n - 1);
    (lo, (lo + u64::from(t > 0.0)).min(n - 1), t)
}

/// numpy's `_lerp`: `a + (b - a) · t`, computed from the nearer end (so `t = 1` gives `b`
/// exactly), as `np.percentile` interpolates.
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 { b - d * (1.0 - t) } else { a + d * t }
}

/// pandas' row names for percentiles (`format_percentiles`): whole percents as `"25%"`,
/// others with just enough decimals to tell neighbours apart (`"33.3%"`).
pub(crate) fn percentile_names(qs: &[f64]) -> Vec<String> {
    let pct: Vec<f64> = qs.iter().map(|q| q * 100.0).collect();
    let round = |x: f64, prec: i32| {
        let f = 10f64.powi(prec);
        (x * f).round() / f
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-8 + 1e-5 * b.abs();
    let precision = |xs: &[f64]| -> i32 {
        let mut diffs = Vec::new();
        if let Some(&first) = xs.first().filter(|&&x| x > 0.0) {
            diffs.push(first);
        }
        diffs.extend(xs.windows(2).map(|w| w[1] - w[0]));
        if let Some(&last) = xs.last().filter(|&&x| x < 100.0) {
            diffs.push(100.0 - last);
        }
        let min = diffs.iter().map(|d| d.abs()).fold(f64::INFINITY, f64::min);
        if min.is_finite() && min > 0.0 { (-min.log10().floor() as i32).max(1) } else { 1 }
    };
    let prec = precision(&pct);
    let is_int: Vec<bool> = pct.iter().map(|&p| close(round(p, prec).trunc(), p)).collect();
    if is_int.iter().all(|&b| b) {
        return pct.iter().map(|p| format!("{}%", round(*p, prec) as i64)).collect();
    }
    let mut unique = pct.clone();
    unique.sort_by(f64::total_cmp);
    unique.dedup();
    let prec = precision(&unique);
    pct.iter()
        .zip(&is_int)
        .map(|(&p, &int)| if int { format!("{}%", p.round() as i64) } else { format!("{}%", round(p, prec)) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Lcg;

    /// Every rank of `data`, split into chunks of the given sizes, found through the
    /// sketches and brackets, equals the sorted data's.
    fn check(data: &[f64], sizes: &[usize]) {
        let mut sorted_all = data.to_vec();
        sorted_all.sort_by(f64::total_cmp);
        let mut chunks = Vec::new();
        let mut at = 0;
        for &s in sizes {
            chunks.push(sorted_values(data[at..at + s].iter().map(|&x| Some(x))));
            at += s;
        }
        let n = data.len() as u64;
        let step = (n / 50).max(1);
        // Many points, and few (wide brackets).
        for points in [SKETCH as u32, 16] {
            let sketches: Vec<Sketch> = chunks.iter().map(|c| sketch(c, points)).collect();
            let b = Brackets::new(sketches.iter().collect());
            for r in (0..n).step_by(step as usize).chain([n - 1]) {
                let (lo, hi) = b.bracket(r).expect("r < n");
                assert!(lo <= hi);
                let parts: Vec<Picked> = chunks.iter().map(|c| pick(c, lo, hi)).collect();
                let prefs: Vec<&Picked> = parts.iter().collect();
                assert_eq!(select(&prefs, lo, hi, r), Some(sorted_all[r as usize]), "rank {r}");
            }
            assert_eq!(b.bracket(n), None);
        }
    }

    #[test]
    fn every_rank_is_found_exactly_in_chunks_of_any_size() {
        let mut g = Lcg(7);
        let data: Vec<f64> = (0..50_000).map(|_| g.next() as f64 / 1e3).collect();
        check(&data, &[50_000]);
        check(&data, &[10_000; 5]);
        check(&data, &[1, 2, 49_000, 997]);
        // Many more values than sample points per chunk.
        let big: Vec<f64> = (0..200_000).map(|_| (g.next() % 1_000_000) as f64).collect();
        check(&big, &[100_000, 60_000, 40_000]);
    }

    #[test]
    fn duplicates_and_constant_columns_are_found_too() {
        let mut g = Lcg(3);
        let few: Vec<f64> = (0..30_000).map(|_| (g.next() % 3) as f64).collect();
        check(&few, &[10_000, 15_000, 5_000]);
        check(&vec![2.5; 20_000], &[7_000, 13_000]);
        let signed: Vec<f64> = (0..9_000).map(|i| if i % 2 == 0 { -0.0 } else { 0.0 }).collect();
        check(&signed, &[4_500, 4_500]);
    }

    #[test]
    fn moments_merge_as_one_pass_would() {
        let data: Vec<f64> = (0..1000).map(|i| (i * i % 97) as f64 - 30.0).collect();
        let whole = sketch(&sorted_values(data.iter().map(|&x| Some(x))), 64);
        let parts: Vec<Sketch> =
            data.chunks(137).map(|c| sketch(&sorted_values(c.iter().map(|&x| Some(x))), 64)).collect();
        let (n, mean, m2) = moments(&parts.iter().collect::<Vec<_>>());
        assert_eq!(n, 1000);
        assert!((mean - whole.sum / 1000.0).abs() < 1e-12);
        assert!((m2 - whole.m2).abs() < 1e-9 * whole.m2);
    }

    #[test]
    fn missing_values_are_left_out() {
        let v = sorted_values([Some(3.0), None, Some(f64::NAN), Some(-1.0)].into_iter());
        assert_eq!(v, [-1.0, 3.0]);
        assert_eq!(sketch(&[], 64).count, 0);
        // A sketch's samples sit at the ranks it says, the greatest value last.
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let s = sketch(&v, 7);
        let ranks: Vec<u64> = (0..s.values.len()).map(|i| s.rank(i)).collect();
        assert_eq!(ranks, [0, 142, 285, 428, 571, 714, 857, 999]);
        assert!(ranks.iter().zip(&s.values).all(|(&r, &x)| x == r as f64));
        assert_eq!(sketch_points(50), SKETCH as u32);
        assert_eq!(sketch_points(100_000), 256);
    }

    #[test]
    fn percentiles_interpolate_as_numpy() {
        // np.percentile([1, 2, 3, 4], 25) = 1.75, 50 → 2.5, 75 → 3.25.
        let x = [1.0, 2.0, 3.0, 4.0];
        for (q, want) in [(0.25, 1.75), (0.5, 2.5), (0.75, 3.25), (0.0, 1.0), (1.0, 4.0)] {
            let (lo, hi, t) = percentile_ranks(q, 4);
            assert_eq!(lerp(x[lo as usize], x[hi as usize], t), want);
        }
        assert_eq!(percentile_ranks(0.5, 1), (0, 0, 0.0));
    }

    #[test]
    fn percentile_names_are_pandas() {
        assert_eq!(percentile_names(&[0.25, 0.5, 0.75]), ["25%", "50%", "75%"]);
        assert_eq!(percentile_names(&[0.1, 0.5, 0.9]), ["10%", "50%", "90%"]);
        assert_eq!(percentile_names(&[0.333, 0.5]), ["33.3%", "50%"]);
        assert_eq!(percentile_names(&[0.0, 0.5, 1.0]), ["0%", "50%", "100%"]);
        assert_eq!(percentile_names(&[0.001, 0.5]), ["0.1%", "50%"]);
    }
}
