//! Sorting kernels: local sorts along an axis, and the samples, splits and merges of a
//! sample sort of a 1-d tensor; the runs of `unique`; the counts of `searchsorted`.
//!
//! The order is numpy's: NaN after every number (before them when descending), -0.0
//! equal to 0.0, equal elements in their original order (every sort here is stable).

use std::cmp::Ordering;

use crate::data::{Buf, Chunk, ChunkRef, DType, Elem};
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
    let mut keys = Vec::with_capacity(lane.len());
    let whole = push_keys(lane, descending, &mut keys);
    if whole {
        let n = keys.len();
        let sorted = radix_sort(keys, vec![(); n]);
        for (o, &k) in lane.iter_mut().zip(&sorted.0) {
            *o = from_radix_key(k, descending);
        }
    } else {
        lane.copy_from_slice(&radix_sort(keys, lane.to_vec()).1);
    }
}

/// Appends the radix keys of `v` to `keys`; returns whether they give the elements back
/// (no NaN, no -0.0, which share their keys with other elements).
fn push_keys<T: Elem>(v: &[T], descending: bool, keys: &mut Vec<u64>) -> bool {
    let mut whole = true;
    keys.extend(v.iter().map(|&e| {
        if T::DTYPE.is_float() {
            let f = e.to_f64();
            whole &= !(f.is_nan() || f == 0.0 && f.is_sign_negative());
        }
        radix_key(e, descending)
    }));
    whole
}

/// Slices at most this long (in a core's cache) sort by LSD passes; longer ones are
/// first cut 2048 ways by their top varying bits (an MSD pass).
const IN_CACHE: usize = 1 << 16;

/// Slices at most this long sort by insertion.
const INSERTION_MAX: usize = 32;

/// Stable radix sort of `keys`, with `payload` (as long: `()` for none) moved alongside.
fn radix_sort<P: Copy + Default>(mut keys: Vec<u64>, mut payload: Vec<P>) -> (Vec<u64>, Vec<P>) {
    assert_eq!(keys.len(), payload.len(), "a payload element per key");
    let n = keys.len();
    let (mut sk, mut sp) = (vec![0u64; n], vec![P::default(); n]);
    if sort_slice(&mut keys, &mut payload, &mut sk, &mut sp) { (sk, sp) } else { (keys, payload) }
}

/// Sorts `k` (stably, `p` alongside) with `sk`/`sp` as scratch of the same length;
/// returns whether the sorted data ended in the scratch. Only the bits that vary count:
/// a long slice is cut by its top varying digit (most significant first) until the cuts
/// fit in cache, where least significant digits first finish them.
fn sort_slice<P: Copy>(k: &mut [u64], p: &mut [P], sk: &mut [u64], sp: &mut [P]) -> bool {
    let n = k.len();
    if n <= INSERTION_MAX {
        insertion(k, p);
        return false;
    }
    let (lo, hi) = k.iter().fold((u64::MAX, 0), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if lo >= hi {
        return false;
    }
    if n <= IN_CACHE {
        return lsd(k, p, sk, sp, 64 - (lo ^ hi).leading_zeros());
    }
    msd::<2048, P>(k, p, sk, sp, lo, hi - lo);
    true
}

/// LSD radix passes over the low `bits` bits (the ones that vary); returns whether the
/// sorted data ended in the scratch.
fn lsd<P: Copy>(k: &mut [u64], p: &mut [P], sk: &mut [u64], sp: &mut [P], bits: u32) -> bool {
    if k.len() < 1 << 13 { lsd_digits::<256, P>(k, p, sk, sp, bits) } else { lsd_digits::<2048, P>(k, p, sk, sp, bits) }
}

/// LSD passes of `SIZE`-way digits; a digit the same in every key is skipped.
fn lsd_digits<const SIZE: usize, P: Copy>(k: &mut [u64], p: &mut [P], sk: &mut [u64], sp: &mut [P], bits: u32) -> bool {
    let w = SIZE.trailing_zeros();
    let passes = bits.div_ceil(w) as usize;
    let mut hist = vec![[0usize; SIZE]; passes];
    for &x in k.iter() {
        for (d, h) in hist.iter_mut().enumerate() {
            h[(x >> (d as u32 * w)) as usize & (SIZE - 1)] += 1;
        }
    }
    let n = k.len();
    let mut in_scratch = false;
    for (d, h) in hist.iter_mut().enumerate() {
        if h.contains(&n) {
            continue;
        }
        let mut sum = 0;
        for c in h.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        let shift = d as u32 * w;
        if in_scratch {
            scatter(sk, sp, k, p, h, |x| (x >> shift) as usize);
        } else {
            scatter(k, p, sk, sp, h, |x| (x >> shift) as usize);
        }
        in_scratch = !in_scratch;
    }
    in_scratch
}

/// One `SIZE`-way pass from `k` into the scratch, on the keys' distance from the least
/// `lo` (the span `span` cut into `SIZE` equal slots), then each slot's run sorted there.
fn msd<const SIZE: usize, P: Copy>(k: &mut [u64], p: &mut [P], sk: &mut [u64], sp: &mut [P], lo: u64, span: u64) {
    let shift = (64 - span.leading_zeros()).saturating_sub(SIZE.trailing_zeros());
    let mut at = [0usize; SIZE];
    for &x in k.iter() {
        at[((x - lo) >> shift) as usize & (SIZE - 1)] += 1;
    }
    let mut starts = [0usize; SIZE];
    let mut sum = 0;
    for (a, s) in at.iter_mut().zip(starts.iter_mut()) {
        *s = sum;
        sum += *a;
        *a = *s;
    }
    scatter(k, p, sk, sp, &mut at, |x| ((x - lo) >> shift) as usize);
    for (&s, &e) in starts.iter().zip(&at) {
        if e - s > 1 && sort_slice(&mut sk[s..e], &mut sp[s..e], &mut k[s..e], &mut p[s..e]) {
            sk[s..e].copy_from_slice(&k[s..e]);
            sp[s..e].copy_from_slice(&p[s..e]);
        }
    }
}

/// One radix pass: each key (and its payload) to the next place of its `SIZE`-way
/// digit (`digit`, taken modulo `SIZE`); `at` holds where each digit's keys start.
#[inline(always)]
fn scatter<const SIZE: usize, P: Copy>(
    k: &[u64],
    p: &[P],
    dk: &mut [u64],
    dp: &mut [P],
    at: &mut [usize; SIZE],
    digit: impl Fn(u64) -> usize,
) {
    assert!(p.len() == k.len() && dk.len() == k.len() && dp.len() == k.len());
    for (&x, &y) in k.iter().zip(p) {
        let b = digit(x) & (SIZE - 1);
        let i = at[b];
        // SAFETY: `at` holds the running starts of each digit's run, from the counts of
        // these very keys by this same digit (a pass only reorders them), so `i` stays below the start of
        // the next digit's run, at most `k.len()`, the length of `dk` and `dp`
        // (asserted above).
        unsafe {
            *dk.get_unchecked_mut(i) = x;
            *dp.get_unchecked_mut(i) = y;
        }
        at[b] = i + 1;
    }
}

/// Stable insertion sort of a short slice, `p` alongside.
fn insertion<P: Copy>(k: &mut [u64], p: &mut [P]) {
    for i in 1..k.len() {
        let (x, y) = (k[i], p[i]);
        let mut j = i;
        while j > 0 && k[j - 1] > x {
            k[j] = k[j - 1];
            p[j] = p[j - 1];
            j -= 1;
        }
        k[j] = x;
        p[j] = y;
    }
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

/// About `count` elements of an unsorted 1-d chunk, at positions spread by a hash (so a
/// pattern in the data that repeats cannot line up with them); all of them if it has
/// fewer. Read in place.
pub(crate) fn sample(x: ChunkRef<'_>, count: usize) -> Chunk {
    let n = x.len();
    let idx: Vec<usize> = if n <= count {
        (0..n).collect()
    } else {
        // One position in each of `count` equal strides, at a hashed offset inside it.
        (0..count)
            .map(|i| {
                let (lo, hi) = (i * n / count, (i + 1) * n / count);
                lo + (mix(i as u64) % (hi - lo) as u64) as usize
            })
            .collect()
    };
    let data = crate::with_dtype!(x.dtype(), T => {
        let v = x.elements::<T>();
        T::wrap(idx.iter().map(|&i| v[i]).collect())
    });
    Chunk { shape: vec![data.len() as u64], data }
}

/// splitmix64's finaliser: a well-spread hash of `i`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
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

/// An unsorted 1-d chunk cut into one piece per range of `bounds` (in sort order), each
/// piece in the chunk's order; an element equal to a bound goes to the range that bound
/// starts. With `offset` (the chunk's first position in the tensor), the elements'
/// positions follow as int64 pieces, range by range.
pub(crate) fn split(x: ChunkRef<'_>, bounds: &Buf, descending: bool, offset: Option<i64>) -> Vec<Chunk> {
    fn typed<T: Elem>(v: &[T], bounds: &[T], descending: bool, offset: Option<i64>) -> Vec<Chunk> {
        let ranges = bounds.len() + 1;
        // Room for a fair share and a margin: a range is rarely larger (a vector grows
        // if it is), and unused room is never touched.
        let room = (v.len() / ranges + v.len() / (4 * ranges) + 64).min(v.len());
        let mut values: Vec<Vec<T>> = (0..ranges).map(|_| Vec::with_capacity(room)).collect();
        let mut positions: Vec<Vec<i64>> =
            (0..if offset.is_some() { ranges } else { 0 }).map(|_| Vec::with_capacity(room)).collect();
        let mut put = |r: usize, i: usize, e: T| {
            values[r].push(e);
            if let Some(o) = offset {
                positions[r].push(o + i as i64);
            }
        };
        if T::DTYPE.is_complex() {
            let cmp = by::<T>(descending);
            for (i, &e) in v.iter().enumerate() {
                put(bounds.partition_point(|b| cmp(b, &e) != Ordering::Greater), i, e);
            }
        } else {
            let finder = RangeFinder::new(bounds.iter().map(|&b| radix_key(b, descending)).collect());
            for (i, &e) in v.iter().enumerate() {
                put(finder.range(radix_key(e, descending)), i, e);
            }
        }
        let piece = |data: Buf| Chunk { shape: vec![data.len() as u64], data };
        let mut out: Vec<Chunk> = values.into_iter().map(|v| piece(T::wrap(v))).collect();
        out.extend(positions.into_iter().map(|p| piece(Buf::I64(p))));
        out
    }
    if bounds.is_empty() {
        let n = x.len();
        let mut out = vec![Chunk { shape: vec![n as u64], data: x.slice(0, n) }];
        if let Some(o) = offset {
            out.push(Chunk { shape: vec![n as u64], data: Buf::I64((o..o + n as i64).collect()) });
        }
        return out;
    }
    crate::with_dtype!(x.dtype(), T => {
        let b = T::into_vec(bounds.clone().cast(x.dtype())).expect("cast to the chunk's dtype");
        typed(&x.elements::<T>(), &b, descending, offset)
    })
}

/// Which range a key falls in, given the sorted keys of the bounds: how many bounds are
/// at or below it. A table over the keys' span between the first and last bound gives
/// the answer straight away for most keys; only the few that share a slot of it with a
/// bound search further (a binary search inside the slot). The table is 16 KiB (in L1).
struct RangeFinder {
    keys: Vec<u64>,
    /// The first bound's key: where slot 0 starts.
    base: u64,
    /// A slot spans `1 << shift` keys.
    shift: u32,
    /// `below[j]`: how many bounds lie below slot `j`; one past the last slot, all.
    below: Vec<u32>,
}

impl RangeFinder {
    const SLOTS: usize = 4096;

    fn new(keys: Vec<u64>) -> RangeFinder {
        debug_assert!(keys.is_sorted() && !keys.is_empty() && keys.len() < u32::MAX as usize);
        let base = keys[0];
        let span = keys[keys.len() - 1] - base;
        let shift = (64 - span.leading_zeros()).saturating_sub(Self::SLOTS.trailing_zeros());
        let mut below = vec![0u32; Self::SLOTS + 1];
        let mut at = 0;
        for (j, b) in below.iter_mut().enumerate().take(Self::SLOTS) {
            let start = base.saturating_add((j as u64) << shift);
            while at < keys.len() && keys[at] < start {
                at += 1;
            }
            *b = at as u32;
        }
        below[Self::SLOTS] = keys.len() as u32;
        RangeFinder { keys, base, shift, below }
    }

    #[inline(always)]
    fn range(&self, k: u64) -> usize {
        let j = ((k.saturating_sub(self.base) >> self.shift) as usize).min(Self::SLOTS - 1);
        let (lo, hi) = (self.below[j] as usize, self.below[j + 1] as usize);
        lo + self.keys[lo..hi].partition_point(|&b| b <= k)
    }
}

/// Where a range's positions come from when it is sorted by [`merge`].
pub(crate) enum Positions<'a> {
    /// Values only.
    None,
    /// One int64 piece per values piece.
    Pieces(&'a [ChunkRef<'a>]),
    /// The pieces are whole chunks in order: positions count from 0.
    Count,
}

/// A range's unsorted pieces (in chunk order, read in place) sorted into one chunk: its
/// values, or with `positions` their positions. Ties keep the pieces' order, so the
/// sort is stable.
pub(crate) fn merge(pieces: &[ChunkRef<'_>], positions: Positions<'_>, dtype: DType, descending: bool) -> Chunk {
    fn typed<T: Elem + Default>(pieces: &[ChunkRef<'_>], positions: Positions<'_>, descending: bool) -> Buf {
        let n: usize = pieces.iter().map(ChunkRef::len).sum();
        let arg = !matches!(positions, Positions::None);
        let payload = || -> Vec<i64> {
            match positions {
                Positions::Pieces(p) => p.iter().flat_map(|c| c.elements::<i64>().into_owned()).collect(),
                _ => (0..n as i64).collect(),
            }
        };
        if T::DTYPE.is_complex() {
            let mut all = Vec::with_capacity(n);
            pieces.iter().for_each(|c| all.extend_from_slice(&c.elements::<T>()));
            if !arg {
                all.sort_by(by(descending));
                return T::wrap(all);
            }
            let pos = payload();
            let mut idx: Vec<usize> = (0..n).collect();
            let cmp = by::<T>(descending);
            idx.sort_by(|&a, &b| cmp(&all[a], &all[b]));
            return Buf::I64(idx.iter().map(|&i| pos[i]).collect());
        }
        let mut keys = Vec::with_capacity(n);
        let mut whole = true;
        for c in pieces {
            whole &= push_keys(&c.elements::<T>(), descending, &mut keys);
        }
        if arg {
            Buf::I64(radix_sort(keys, payload()).1)
        } else if whole {
            let (sorted, _) = radix_sort(keys, vec![(); n]);
            T::wrap(sorted.iter().map(|&k| from_radix_key(k, descending)).collect())
        } else {
            // NaN and -0.0 are not their keys: the elements travel with them.
            let mut all = Vec::with_capacity(n);
            pieces.iter().for_each(|c| all.extend_from_slice(&c.elements::<T>()));
            T::wrap(radix_sort(keys, all).1)
        }
    }
    let data = crate::with_dtype!(dtype, T => typed::<T>(pieces, positions, descending));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(data: Buf) -> Chunk {
        Chunk { shape: vec![data.len() as u64], data }
    }

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
    fn splits_put_equal_keys_in_one_range_and_merges_are_stable() {
        let x = Chunk { shape: vec![6], data: Buf::I64(vec![5, 2, 7, 1, 2, 2]) };
        let b = Buf::I64(vec![2, 6]);
        let p = split(ChunkRef::Owned(&x), &b, false, Some(10));
        let data: Vec<Buf> = p.iter().map(|c| c.data.clone()).collect();
        // Values below 2, from 2 (all three 2s) to below 6, from 6; then their positions.
        assert_eq!(
            data,
            [
                Buf::I64(vec![1]),
                Buf::I64(vec![5, 2, 2, 2]),
                Buf::I64(vec![7]),
                Buf::I64(vec![13]),
                Buf::I64(vec![10, 11, 14, 15]),
                Buf::I64(vec![12])
            ]
        );
        // Ties keep the pieces' order, and each piece's own.
        let runs = [vector(Buf::I64(vec![2, 5, 2])), vector(Buf::I64(vec![2, 3]))];
        let pos = [vector(Buf::I64(vec![0, 1, 2])), vector(Buf::I64(vec![10, 11]))];
        let r: Vec<ChunkRef<'_>> = runs.iter().map(ChunkRef::Owned).collect();
        let q: Vec<ChunkRef<'_>> = pos.iter().map(ChunkRef::Owned).collect();
        assert_eq!(merge(&r, Positions::Pieces(&q), DType::I64, false).data, Buf::I64(vec![0, 2, 10, 11, 1]));
        assert_eq!(merge(&r, Positions::Count, DType::I64, false).data, Buf::I64(vec![0, 2, 3, 4, 1]));
        assert_eq!(merge(&r, Positions::None, DType::I64, true).data, Buf::I64(vec![5, 3, 2, 2, 2]));
    }

    #[test]
    fn long_radix_sorts_cut_by_msd_are_the_comparison_sorts() {
        // Longer than IN_CACHE, so a 256-way pass runs, with a skewed bucket (many equal
        // high bits) that recurses, and NaN/-0.0 that make the elements travel.
        let mut z = 11u64;
        let n = 5 * IN_CACHE + 7;
        let floats: Vec<f64> = (0..n)
            .map(|i| {
                z = mix(z);
                match i % 101 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2..=40 => 1.0 + (z % 1000) as f64 * 1e-12,
                    _ => (z >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0,
                }
            })
            .collect();
        for descending in [false, true] {
            let x = Buf::F64(floats.clone());
            let (want, want_idx) = by_comparing(&floats, descending);
            assert_eq!(argsort_lanes(&x, 1, n, 1, descending), want_idx);
            let Buf::F64(got) = sort_lanes(x, 1, n, 1, descending) else { panic!() };
            let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want));
            let ints: Vec<i64> = floats.iter().map(|&f| (f * 1e6) as i64).collect();
            let Buf::I64(got) = sort_lanes(Buf::I64(ints.clone()), 1, n, 1, descending) else { panic!() };
            assert_eq!(got, by_comparing(&ints, descending).0);
        }
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
    fn samples_are_spread_and_bounds_evenly_spaced() {
        let c = Chunk { shape: vec![1000], data: Buf::I64((0..1000).collect()) };
        let s = sample(ChunkRef::Owned(&c), 4);
        let Buf::I64(v) = &s.data else { panic!() };
        // One element from each quarter.
        assert_eq!(v.iter().map(|&e| e / 250).collect::<Vec<_>>(), [0, 1, 2, 3]);
        let b = bounds(&[s.clone(), s], DType::I64, 3, false);
        assert_eq!(b.data.len(), 2);
        let small = Chunk { shape: vec![3], data: Buf::I64(vec![3, 1, 2]) };
        assert_eq!(sample(ChunkRef::Owned(&small), 4).data, small.data);
    }
}
