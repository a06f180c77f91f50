//! Sorting numbers fast: a column as order-preserving `u64` keys, a stable argsort of
//! them (one bucket pass on the bits that vary, then small sorts), and the range each
//! key falls in. The sample sort's split and merge tasks use these for numeric and
//! boolean keys (polars' multi-column sort took ~60 ms per million rows on one thread;
//! this takes a fraction), and fall back to polars for strings.

use polars::prelude::{DataType, IdxSize, PolarsResult, Series, polars_bail};

/// Whether [`keys`] orders a column of this dtype (dates and times by their physical
/// integers, whose order is theirs).
pub(crate) fn orderable(dt: &DataType) -> bool {
    dt.is_primitive_numeric()
        || dt == &DataType::Boolean
        || crate::expr::is_temporal(dt)
        || crate::temporal::is_duration(dt)
}

/// A column as `u64` keys whose order is the column's (ascending), and which rows are
/// missing (null, or NaN for floats; their keys mean nothing). Floats: -0.0 equals 0.0.
pub(crate) struct Keys {
    pub(crate) keys: Vec<u64>,
    pub(crate) missing: Option<Vec<bool>>,
}

/// The keys of `s` (see [`Keys`]).
pub(crate) fn keys(s: &Series) -> PolarsResult<Keys> {
    fn split<T>(it: impl Iterator<Item = Option<T>>, key: impl Fn(T) -> Option<u64>) -> Keys {
        let (mut keys, mut missing) = (Vec::with_capacity(it.size_hint().0), Vec::with_capacity(it.size_hint().0));
        for v in it {
            let k = v.and_then(&key);
            keys.push(k.unwrap_or(0));
            missing.push(k.is_none());
        }
        let any = missing.iter().any(|&m| m);
        Keys { keys, missing: any.then_some(missing) }
    }
    let physical;
    let s = if crate::expr::is_temporal(s.dtype()) || crate::temporal::is_duration(s.dtype()) {
        physical = s.to_physical_repr();
        &*physical
    } else {
        s
    };
    let dt = s.dtype();
    Ok(if dt.is_float() {
        let s = s.cast(&DataType::Float64)?;
        split(s.f64()?.iter(), |v: f64| (!v.is_nan()).then(|| float_key(v)))
    } else if dt.is_signed_integer() {
        let s = s.cast(&DataType::Int64)?;
        split(s.i64()?.iter(), |v: i64| Some((v as u64) ^ (1 << 63)))
    } else if dt.is_unsigned_integer() {
        let s = s.cast(&DataType::UInt64)?;
        split(s.u64()?.iter(), Some)
    } else if dt == &DataType::Boolean {
        split(s.bool()?.iter(), |v: bool| Some(u64::from(v)))
    } else {
        polars_bail!(ComputeError: "ordering by a column of dtype {dt} is not supported here")
    })
}

/// An order-preserving key of a float that is not NaN.
fn float_key(v: f64) -> u64 {
    let bits = (v + 0.0).to_bits();
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

impl Keys {
    fn is_missing(&self, r: usize) -> bool {
        self.missing.as_ref().is_some_and(|m| m[r])
    }

    /// The permutation that sorts the rows `order` (a permutation of every row) by these
    /// keys, ascending or descending, stably (rows with equal keys keep their places in
    /// `order`), missing values last: one pass of a lexicographic multi-key sort.
    pub(crate) fn sort(&self, order: &[IdxSize], descending: bool) -> Vec<IdxSize> {
        let mut pairs = Vec::with_capacity(order.len());
        let mut last = Vec::new();
        for &r in order {
            if self.is_missing(r as usize) {
                last.push(r);
            } else {
                let k = self.keys[r as usize];
                pairs.push((if descending { !k } else { k }, r));
            }
        }
        let mut out = argsort_pairs(pairs);
        out.extend(last);
        out
    }

    /// Which of `bounds.len() + 1` ranges each row falls in: the number of `bounds`
    /// (ascending keys) at or below its key, counted from the other end when
    /// `descending`; missing rows go to the last range either way.
    pub(crate) fn ranges(&self, bounds: &[u64], descending: bool) -> Vec<u32> {
        let nb = bounds.len() as u32;
        let mut which = range_of(&self.keys, bounds);
        for (r, w) in which.iter_mut().enumerate() {
            *w = if self.is_missing(r) {
                nb
            } else if descending {
                nb - *w
            } else {
                *w
            };
        }
        which
    }
}

/// The permutation that sorts `keys` ascending, stably (equal keys keep their order).
#[cfg(test)]
pub(crate) fn argsort(keys: &[u64]) -> Vec<IdxSize> {
    argsort_pairs(keys.iter().enumerate().map(|(i, &k)| (k, i as IdxSize)).collect())
}

/// The second items of `(key, item)` pairs in ascending order of key, stably.
fn argsort_pairs(mut pairs: Vec<(u64, IdxSize)>) -> Vec<IdxSize> {
    let mut buf = vec![(0u64, 0 as IdxSize); pairs.len()];
    radix_sort(&mut pairs, &mut buf);
    pairs.into_iter().map(|(_, i)| i).collect()
}

/// A stable most-significant-digit radix sort by key: the pairs are scattered into 256
/// buckets by the top 8 bits that vary among them (the scatter writes 256 streams, which
/// caches keep up with), each bucket is sorted the same way, and buckets of a few pairs by
/// insertion. A million evenly spread keys take two levels, the second within the cache.
fn radix_sort(v: &mut [(u64, IdxSize)], buf: &mut [(u64, IdxSize)]) {
    if v.len() <= 48 {
        insertion_sort(v);
        return;
    }
    let (mut min, mut max) = (u64::MAX, 0u64);
    for &(k, _) in v.iter() {
        min = min.min(k);
        max = max.max(k);
    }
    if min == max {
        return;
    }
    let shift = (64 - (max - min).leading_zeros()).saturating_sub(8);
    let digit = |k: u64| ((k - min) >> shift) as usize;
    let mut start = [0usize; 257];
    for &(k, _) in v.iter() {
        start[digit(k) + 1] += 1;
    }
    for b in 1..257 {
        start[b] += start[b - 1];
    }
    let mut at = start;
    for &p in v.iter() {
        let d = digit(p.0);
        buf[at[d]] = p;
        at[d] += 1;
    }
    v.copy_from_slice(&buf[..v.len()]);
    for b in 0..256 {
        let (s, e) = (start[b], start[b + 1]);
        if e - s > 1 {
            radix_sort(&mut v[s..e], &mut buf[s..e]);
        }
    }
}

/// Stable insertion sort by key.
fn insertion_sort(v: &mut [(u64, IdxSize)]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1].0 > x.0 {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// For each key, how many of `bounds` (ascending) are `<=` it: the index of its range
/// among `bounds.len() + 1`. A branch-free binary search.
pub(crate) fn range_of(keys: &[u64], bounds: &[u64]) -> Vec<u32> {
    if bounds.len() <= 128 {
        // Few bounds (one per chunk of the frame): counting them is a few vector
        // compares a key, faster than a search's unpredictable steps.
        return keys.iter().map(|&k| bounds.iter().map(|&b| u32::from(b <= k)).sum()).collect();
    }
    keys.iter()
        .map(|&k| {
            let (mut base, mut size) = (0usize, bounds.len());
            if size == 0 {
                return 0;
            }
            while size > 1 {
                let half = size / 2;
                base = if bounds[base + half] <= k { base + half } else { base };
                size -= half;
            }
            (base + usize::from(bounds[base] <= k)) as u32
        })
        .collect()
}

/// The rows grouped by part (`which[r]` in `0..parts`), each group in row order: the
/// permutation, and where each part starts in it (`parts + 1` offsets).
pub(crate) fn group_rows(which: &[u32], parts: usize) -> (Vec<IdxSize>, Vec<usize>) {
    let mut start = vec![0usize; parts + 1];
    for &p in which {
        start[p as usize + 1] += 1;
    }
    for p in 1..=parts {
        start[p] += start[p - 1];
    }
    let mut at = start.clone();
    let mut perm = vec![0 as IdxSize; which.len()];
    for (r, &p) in which.iter().enumerate() {
        perm[at[p as usize]] = r as IdxSize;
        at[p as usize] += 1;
    }
    (perm, start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Lcg;
    use polars::prelude::NamedFrom;

    fn stable_reference(keys: &[u64]) -> Vec<IdxSize> {
        let mut idx: Vec<IdxSize> = (0..keys.len() as IdxSize).collect();
        idx.sort_by_key(|&i| keys[i as usize]);
        idx
    }

    #[test]
    fn argsort_is_a_stable_sort_whatever_the_spread() {
        let mut g = Lcg(1);
        let spread: Vec<u64> = (0..100_000).map(|_| g.next()).collect();
        let narrow: Vec<u64> = (0..50_000).map(|_| 1_000_000 + g.next() % 977).collect();
        let few: Vec<u64> = (0..40_000).map(|_| [3, u64::MAX, 1 << 60][(g.next() % 3) as usize]).collect();
        let skewed: Vec<u64> = (0..30_000).map(|i| if i % 2 == 0 { 7 } else { g.next() }).collect();
        for keys in [spread, narrow, few, skewed, vec![5], vec![], vec![2, 1], vec![9; 100]] {
            assert_eq!(argsort(&keys), stable_reference(&keys));
        }
    }

    fn sorted(s: &Series, descending: bool) -> Vec<IdxSize> {
        let all: Vec<IdxSize> = (0..s.len() as IdxSize).collect();
        keys(s).unwrap().sort(&all, descending)
    }

    #[test]
    fn keys_order_floats_ints_and_booleans_with_missing_values_last() {
        let f = Series::new("f".into(), [Some(1.5), None, Some(-0.0), Some(f64::NAN), Some(0.0), Some(-2.0)]);
        assert_eq!(sorted(&f, false), [5, 2, 4, 0, 1, 3], "-0.0 ties with 0.0; null and NaN last, in row order");
        assert_eq!(sorted(&f, true), [0, 2, 4, 5, 1, 3], "descending, missing values still last");
        let i = Series::new("i".into(), [Some(i64::MIN), Some(3), None, Some(-1), Some(i64::MAX)]);
        assert_eq!(sorted(&i, false), [0, 3, 1, 4, 2]);
        assert_eq!(sorted(&i, true), [4, 1, 3, 0, 2]);
        let u = Series::new("u".into(), [u64::MAX, 0, u64::MAX - 1]);
        assert_eq!(sorted(&u, false), [1, 2, 0]);
        let b = Series::new("b".into(), [Some(true), Some(false), None, Some(false)]);
        assert_eq!(sorted(&b, false), [1, 3, 0, 2]);
        let inf = Series::new("x".into(), [f64::INFINITY, f64::NEG_INFINITY, f64::MAX]);
        assert_eq!(sorted(&inf, false), [1, 2, 0]);
        // A second pass sorts within the first's order (a lexicographic sort, last key first).
        let k2 = Series::new("k2".into(), [1i64, 0, 1, 0]);
        let k1 = Series::new("k1".into(), [Some(2i64), Some(1), None, Some(2)]);
        let by_k2 = keys(&k2).unwrap().sort(&[0, 1, 2, 3], false);
        assert_eq!(keys(&k1).unwrap().sort(&by_k2, false), [1, 3, 0, 2]);
        let ranges = keys(&f).unwrap().ranges(&[float_key(0.0), float_key(1.5)], false);
        assert_eq!(ranges, [2, 2, 1, 2, 1, 0]);
        let ranges = keys(&f).unwrap().ranges(&[float_key(0.0), float_key(1.5)], true);
        assert_eq!(ranges, [0, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn ranges_and_groups_follow_the_bounds() {
        let which = range_of(&[5, 1, 10, 3, 7, 3], &[3, 7]);
        assert_eq!(which, [1, 0, 2, 1, 2, 1], "a key equal to a bound goes above it");
        let (perm, start) = group_rows(&which, 3);
        assert_eq!(perm, [1, 0, 3, 5, 2, 4]);
        assert_eq!(start, [0, 1, 4, 6]);
        assert_eq!(range_of(&[4], &[]), [0]);
        // Many bounds take the binary search: the same answers.
        let many: Vec<u64> = (0..300).map(|b| b * 10).collect();
        let keys: Vec<u64> = (0..4000).collect();
        let counted: Vec<u32> = keys.iter().map(|&k| many.iter().filter(|&&b| b <= k).count() as u32).collect();
        assert_eq!(range_of(&keys, &many), counted);
    }
}
