//! Sorting kernels: local sorts along an axis, and the samples, splits and merges of a
//! sample sort of a 1-d tensor; the runs of `unique`; the counts of `searchsorted`.
//!
//! The order is numpy's: NaN after every number (before them when descending), -0.0
//! equal to 0.0, equal elements in their original order (every sort here is stable).

use std::cmp::Ordering;

use crate::data::{Buf, Chunk, DType, Elem, numel};
use crate::with_buf;

/// numpy's order of two elements: NaN last, otherwise as numbers.
fn order<T: Elem>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        // Not comparable: one (or both) is NaN.
        None => a.partial_cmp(&a).is_none().cmp(&b.partial_cmp(&b).is_none()),
    }
}

fn by<T: Elem>(descending: bool) -> impl Fn(&T, &T) -> Ordering + Copy {
    move |a, b| if descending { order(*b, *a) } else { order(*a, *b) }
}

/// Lanes at least this long sort by radix (below it, comparing is as fast).
const RADIX_MIN: usize = 1024;

/// An unsigned key whose order is numpy's order of the elements: floats by their bits
/// with the sign folded (-0.0 as 0.0, every NaN the largest key), signed integers with
/// the sign bit flipped. Descending flips every bit, which keeps ties in their order.
#[inline(always)]
fn radix_key<T: Elem>(v: T, descending: bool) -> u64 {
    let k = match T::DTYPE {
        DType::F64 | DType::F32 => {
            let f = v.to_f64();
            if f.is_nan() {
                u64::MAX
            } else {
                let b = (f + 0.0).to_bits();
                if b >> 63 == 1 { !b } else { b | 1 << 63 }
            }
        }
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => (v.to_i64() as u64) ^ 1 << 63,
        _ => v.to_i64() as u64,
    };
    if descending { !k } else { k }
}

/// The element a key was made from, when the key says all of it: not for NaN (one key
/// for every NaN) nor -0.0 (the key of 0.0); the caller checks.
#[inline(always)]
fn from_radix_key<T: Elem>(k: u64, descending: bool) -> T {
    let k = if descending { !k } else { k };
    match T::DTYPE {
        DType::F64 | DType::F32 => T::from_f64(f64::from_bits(if k >> 63 == 1 { k ^ 1 << 63 } else { !k })),
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => T::from_i64((k ^ 1 << 63) as i64),
        _ => T::from_i64(k as i64),
    }
}

/// A sorted lane: by keys alone when they give the elements back (no NaN, no -0.0:
/// half the bytes moved per pass), else keys with the elements alongside.
fn radix_lane<T: Elem + Default>(lane: &mut [T], descending: bool) {
    let mut whole = true;
    let keys: Vec<u64> = lane
        .iter()
        .map(|&e| {
            if T::DTYPE.is_float() {
                let f = e.to_f64();
                whole &= !(f.is_nan() || f == 0.0 && f.is_sign_negative());
            }
            radix_key(e, descending)
        })
        .collect();
    if whole {
        let sorted = radix_sort(keys, Vec::<()>::new());
        for (o, &k) in lane.iter_mut().zip(&sorted.0) {
            *o = from_radix_key(k, descending);
        }
    } else {
        lane.copy_from_slice(&radix_sort(keys, lane.to_vec()).1);
    }
}

/// Stable LSD radix sort of `keys` (and `payload` with them, unless it is empty), a
/// byte per pass; a pass whose byte is the same in every key is skipped (the high bytes
/// of most data).
fn radix_sort<P: Copy + Default>(mut keys: Vec<u64>, mut payload: Vec<P>) -> (Vec<u64>, Vec<P>) {
    let n = keys.len();
    let carry = !payload.is_empty();
    let mut hist = vec![[0usize; 256]; 8];
    for &k in &keys {
        for (d, h) in hist.iter_mut().enumerate() {
            h[((k >> (8 * d)) & 255) as usize] += 1;
        }
    }
    let (mut k2, mut p2) = (vec![0u64; n], vec![P::default(); if carry { n } else { 0 }]);
    for (d, h) in hist.iter().enumerate() {
        if h.contains(&n) {
            continue;
        }
        let mut at = [0usize; 256];
        let mut sum = 0;
        for (b, &c) in h.iter().enumerate() {
            at[b] = sum;
            sum += c;
        }
        let shift = 8 * d;
        if carry {
            for (&k, &p) in keys.iter().zip(&payload) {
                let b = ((k >> shift) & 255) as usize;
                k2[at[b]] = k;
                p2[at[b]] = p;
                at[b] += 1;
            }
            std::mem::swap(&mut payload, &mut p2);
        } else {
            for &k in &keys {
                let b = ((k >> shift) & 255) as usize;
                k2[at[b]] = k;
                at[b] += 1;
            }
        }
        std::mem::swap(&mut keys, &mut k2);
    }
    (keys, payload)
}

/// `x` (laid out `outer × len × inner`) sorted along its middle axis.
pub(super) fn sort_lanes(x: Buf, outer: usize, len: usize, inner: usize, descending: bool) -> Buf {
    fn typed<T: Elem + Default>(mut v: Vec<T>, outer: usize, len: usize, inner: usize, descending: bool) -> Vec<T> {
        if inner == 1 {
            for lane in v.chunks_mut(len.max(1)) {
                if lane.len() >= RADIX_MIN && !T::DTYPE.is_complex() {
                    radix_lane(lane, descending);
                } else {
                    lane.sort_by(by(descending));
                }
            }
            return v;
        }
        let mut lane = Vec::with_capacity(len);
        for o in 0..outer {
            for i in 0..inner {
                lane.clear();
                lane.extend((0..len).map(|k| v[(o * len + k) * inner + i]));
                lane.sort_by(by(descending));
                for (k, &e) in lane.iter().enumerate() {
                    v[(o * len + k) * inner + i] = e;
                }
            }
        }
        v
    }
    with_buf!(x, v => Elem::wrap(typed(v, outer, len, inner, descending)))
}

/// The positions along the middle axis that sort each lane of `x` (stable), as int64.
pub(super) fn argsort_lanes(x: &Buf, outer: usize, len: usize, inner: usize, descending: bool) -> Vec<i64> {
    fn typed<T: Elem>(v: &[T], outer: usize, len: usize, inner: usize, descending: bool) -> Vec<i64> {
        if inner == 1 && len >= RADIX_MIN && !T::DTYPE.is_complex() {
            let mut out = Vec::with_capacity(v.len());
            for lane in v.chunks(len) {
                let keys = lane.iter().map(|&e| radix_key(e, descending)).collect();
                out.extend(radix_sort(keys, (0..lane.len() as i64).collect()).1);
            }
            return out;
        }
        let mut out = vec![0i64; v.len()];
        let mut idx: Vec<usize> = Vec::with_capacity(len);
        let cmp = by::<T>(descending);
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| (o * len + k) * inner + i;
                idx.clear();
                idx.extend(0..len);
                idx.sort_by(|&a, &b| cmp(&v[at(a)], &v[at(b)]));
                for (k, &p) in idx.iter().enumerate() {
                    out[at(k)] = p as i64;
                }
            }
        }
        out
    }
    with_buf!(x, v => typed(v, outer, len, inner, descending))
}

/// `count` evenly spaced elements of a sorted 1-d chunk (all of them if it has fewer).
pub(crate) fn sample(sorted: &Chunk, count: usize) -> Chunk {
    let n = sorted.data.len();
    let idx: Vec<usize> =
        if n <= count { (0..n).collect() } else { (0..count).map(|i| (i * n + n / 2) / count).collect() };
    let data = sorted.data.gather(&idx);
    Chunk { shape: vec![data.len() as u64], data }
}

/// The bounds of `ranges` ranges from the samples of every chunk: `ranges - 1` elements,
/// evenly spaced in the samples' order (repeating when there are few samples, which
/// leaves ranges empty). There must be at least one sample.
pub(crate) fn bounds(samples: &[Chunk], dtype: DType, ranges: usize, descending: bool) -> Chunk {
    let mut all = Buf::with_capacity(dtype, samples.iter().map(|s| s.data.len()).sum());
    for s in samples {
        all.extend(&s.data.clone().cast(dtype));
    }
    let n = all.len();
    let sorted = sort_lanes(all, 1, n, 1, descending);
    let idx: Vec<usize> = (1..ranges.max(1)).map(|r| (r * n / ranges).min(n.saturating_sub(1))).collect();
    let data = sorted.gather(&idx);
    Chunk { shape: vec![data.len() as u64], data }
}

/// Where each bound starts in the sorted 1-d `sorted`: the first element not before it
/// (so elements equal to a bound all go to the range it starts).
pub(crate) fn cut_points(sorted: &Buf, bounds: &Buf, descending: bool) -> Vec<usize> {
    fn typed<T: Elem>(v: &[T], b: &Buf, descending: bool) -> Vec<usize> {
        let cmp = by::<T>(descending);
        let bounds = T::into_vec(b.clone()).expect("bounds in the chunk's dtype");
        bounds.iter().map(|x| v.partition_point(|e| cmp(e, x) == Ordering::Less)).collect()
    }
    let b = bounds.clone().cast(sorted.dtype());
    with_buf!(sorted, v => typed(v, &b, descending))
}

/// The pieces of the sorted 1-d `sorted` between consecutive cut points.
pub(crate) fn pieces(sorted: &Buf, cuts: &[usize]) -> Vec<Chunk> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = 0;
    for &hi in cuts.iter().chain(std::iter::once(&sorted.len())) {
        let hi = hi.max(lo);
        let data = sorted.slice(lo, hi);
        out.push(Chunk { shape: vec![data.len() as u64], data });
        lo = hi;
    }
    out
}

/// Sorted runs (in chunk order) merged into one sorted chunk; with `payload` (one run of
/// int64 positions per run), those positions in the merged order instead. Ties keep the
/// runs' order, so the merge is stable.
pub(crate) fn merge(runs: &[Buf], payload: Option<&[Buf]>, dtype: DType, descending: bool) -> Chunk {
    let n: usize = runs.iter().map(Buf::len).sum();
    let mut keys = Buf::with_capacity(dtype, n);
    for r in runs {
        keys.extend(&r.clone().cast(dtype));
    }
    let data = match payload {
        None => sort_lanes(keys, 1, n, 1, descending),
        Some(p) => {
            // The stable sort of the concatenated runs finds and merges them.
            let order = argsort_lanes(&keys, 1, n, 1, descending);
            let mut pos = Vec::with_capacity(n);
            for r in p {
                let Buf::I64(v) = r.clone().cast(DType::I64) else { unreachable!("cast") };
                pos.extend(v);
            }
            Buf::I64(order.iter().map(|&k| pos[k as usize]).collect())
        }
    };
    Chunk { shape: vec![data.len() as u64], data }
}

/// The distinct elements of a sorted 1-d buffer, and how many times each occurs. With
/// `equal_nan`, every NaN is one element (numpy's `unique`); without, each NaN is its
/// own (the Array API's `unique_values`).
pub(crate) fn runs(sorted: &Buf, equal_nan: bool) -> (Buf, Vec<i64>) {
    fn typed<T: Elem>(v: &[T], equal_nan: bool) -> (Vec<T>, Vec<i64>) {
        let mut vals: Vec<T> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        for &e in v {
            let nan = e.partial_cmp(&e).is_none();
            match vals.last() {
                Some(&last) if (!nan && last == e) || (nan && equal_nan && last.partial_cmp(&last).is_none()) => {
                    *counts.last_mut().expect("with a value") += 1;
                }
                _ => {
                    vals.push(e);
                    counts.push(1);
                }
            }
        }
        (vals, counts)
    }
    with_buf!(sorted, v => {
        let (vals, counts) = typed(v, equal_nan);
        (Elem::wrap(vals), counts)
    })
}

/// For each element of `v`, how many elements of the sorted 1-d `a` come before it
/// (`right`: before it or equal to it), as int64.
pub(crate) fn count_before(a: &Buf, v: &Buf, right: bool) -> Vec<i64> {
    fn typed<T: Elem>(a: &[T], v: Vec<T>, right: bool) -> Vec<i64> {
        v.iter()
            .map(|x| {
                a.partition_point(|e| match order(*e, *x) {
                    Ordering::Less => true,
                    Ordering::Equal => right,
                    Ordering::Greater => false,
                }) as i64
            })
            .collect()
    }
    let v = v.clone().cast(a.dtype());
    with_buf!(a, s => typed(s, Elem::into_vec(v).expect("cast alike"), right))
}

/// Whether a chunk is 1-d with as many elements as its shape says.
pub(crate) fn is_vector(c: &Chunk) -> bool {
    c.shape.len() == 1 && numel(&c.shape) == c.data.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &[f64]) -> Buf {
        Buf::F64(v.to_vec())
    }

    /// The comparison sort's answer for a lane, to check the radix path against.
    fn by_comparing<T: Elem>(v: &[T], descending: bool) -> (Vec<T>, Vec<i64>) {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| by::<T>(descending)(&v[a], &v[b]));
        (idx.iter().map(|&i| v[i]).collect(), idx.iter().map(|&i| i as i64).collect())
    }

    #[test]
    fn radix_sorts_are_the_comparison_sorts_bit_for_bit() {
        let mut z = 7u64;
        let mut next = move || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x ^ (x >> 27)
        };
        let n = 5000;
        let specials = [f64::NAN, -f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e-310, -1e-310, 2.5, -2.5];
        let floats: Vec<f64> = (0..n)
            .map(|i| if i % 7 == 0 { specials[(next() % 10) as usize] } else { (next() % 2000) as f64 / 7.0 - 140.0 })
            .collect();
        let ints: Vec<i64> = (0..n).map(|_| next() as i64 >> (next() % 64)).collect();
        for descending in [false, true] {
            let check = |x: Buf| {
                let bits = |b: &Buf| -> Vec<u64> {
                    with_buf!(b, v => v.iter().map(|e| e.to_f64().to_bits() ^ e.to_i64() as u64).collect())
                };
                let (want, want_idx) = with_buf!(&x, v => {
                    let (s, i) = by_comparing(v, descending);
                    (Elem::wrap(s), i)
                });
                assert_eq!(argsort_lanes(&x, 1, n, 1, descending), want_idx, "{:?} descending {descending}", x.dtype());
                assert_eq!(bits(&sort_lanes(x.clone(), 1, n, 1, descending)), bits(&want), "{:?}", x.dtype());
            };
            check(Buf::F64(floats.clone()));
            // Without NaN and -0.0 the keys alone give the elements back.
            check(Buf::F64(floats.iter().map(|&f| if f.is_nan() || f == 0.0 { 1.25 } else { f }).collect()));
            check(Buf::F32(floats.iter().map(|&f| f as f32).collect()));
            check(Buf::I64(ints.clone()));
            check(Buf::U64(ints.iter().map(|&i| i as u64).collect()));
            check(Buf::I8(ints.iter().map(|&i| i as i8).collect()));
            check(Buf::Bool(ints.iter().map(|&i| i & 1 == 1).collect()));
        }
    }

    #[test]
    fn nan_sorts_last_and_ties_keep_their_order() {
        let x = f(&[3.0, f64::NAN, -0.0, 1.0, 0.0, f64::NAN, -5.0]);
        let Buf::F64(s) = sort_lanes(x.clone(), 1, 7, 1, false) else { panic!() };
        assert_eq!(&s[..5], &[-5.0, -0.0, 0.0, 1.0, 3.0]);
        assert!(
            s[0].is_sign_negative() && s[1].is_sign_negative() && s[2].is_sign_positive(),
            "-0.0 before 0.0 as given"
        );
        assert!(s[5].is_nan() && s[6].is_nan());
        assert_eq!(argsort_lanes(&x, 1, 7, 1, false), [6, 2, 4, 3, 0, 1, 5]);
        assert_eq!(argsort_lanes(&x, 1, 7, 1, true), [1, 5, 0, 3, 2, 4, 6]);
    }

    #[test]
    fn lanes_along_a_middle_axis() {
        // 2 × 3 × 2, sorted along the axis of 3.
        let x = Buf::I32(vec![5, 0, 1, 9, 3, 4, 2, 2, 1, 1, 0, 0]);
        let Buf::I32(s) = sort_lanes(x.clone(), 2, 3, 2, false) else { panic!() };
        assert_eq!(s, [1, 0, 3, 4, 5, 9, 0, 0, 1, 1, 2, 2]);
        assert_eq!(argsort_lanes(&x, 2, 3, 2, false), [1, 0, 2, 2, 0, 1, 2, 2, 1, 1, 0, 0]);
    }

    #[test]
    fn cuts_split_equal_keys_into_one_range_and_merges_are_stable() {
        let a = Buf::I64(vec![1, 2, 2, 2, 5, 7]);
        let b = Buf::I64(vec![2, 6]);
        let cuts = cut_points(&a, &b, false);
        assert_eq!(cuts, [1, 5]);
        let p = pieces(&a, &cuts);
        assert_eq!(p.iter().map(|c| c.data.len()).collect::<Vec<_>>(), [1, 4, 1]);
        // Two runs with ties: positions of the first run come first.
        let runs = [Buf::I64(vec![2, 2, 5]), Buf::I64(vec![2, 3])];
        let pos = [Buf::I64(vec![0, 1, 2]), Buf::I64(vec![10, 11])];
        let m = merge(&runs, Some(&pos), DType::I64, false);
        assert_eq!(m.data, Buf::I64(vec![0, 1, 10, 11, 2]));
    }

    #[test]
    fn runs_count_and_nan_is_one_value_or_many() {
        let s = f(&[1.0, 1.0, 2.0, f64::NAN, f64::NAN]);
        let (v, c) = runs(&s, true);
        assert_eq!(v.len(), 3);
        assert_eq!(c, [2, 1, 2]);
        let (v, c) = runs(&s, false);
        assert_eq!(v.len(), 4);
        assert_eq!(c, [2, 1, 1, 1]);
    }

    #[test]
    fn counts_before_match_numpys_searchsorted() {
        let a = f(&[1.0, 2.0, 2.0, 3.0, f64::NAN]);
        let v = f(&[0.0, 2.0, 2.5, 9.0, f64::NAN]);
        assert_eq!(count_before(&a, &v, false), [0, 1, 3, 4, 4]);
        assert_eq!(count_before(&a, &v, true), [0, 3, 3, 4, 5]);
    }

    #[test]
    fn samples_and_bounds_are_evenly_spaced() {
        let c = Chunk { shape: vec![10], data: Buf::I64((0..10).collect()) };
        let s = sample(&c, 4);
        assert_eq!(s.data, Buf::I64(vec![1, 3, 6, 8]));
        let b = bounds(&[s.clone(), s], DType::I64, 3, false);
        assert_eq!(b.data.len(), 2);
    }
}
