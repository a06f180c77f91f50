//! Group-by aggregation in one pass over the rows: each row gets a group number (integer
//! and string keys, one or several packed into one `i64`, strings numbered first, through
//! a dense table when they span a small range and a hash map otherwise; other keys
//! through polars' grouping), and each
//! step folds its column into per-group accumulators. polars' single-threaded group-by
//! aggregations took ~190 ms per million rows of 630 000 groups here.

use hashbrown::HashMap;
use polars::prelude::*;

use crate::eval::missing;

/// How one output column of a group-by step is made from an input column. Missing
/// values (null, or NaN) are skipped by every rule but `Size`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rule {
    /// Sum (0 for none): int64 for integers, float64 for floats.
    Sum,
    /// Number of non-missing values, int64.
    Count,
    /// Number of rows, int64.
    Size,
    /// Least value (missing for none), in the column's dtype.
    Min,
    /// Greatest, likewise.
    Max,
    /// First value in row order, in the column's dtype.
    First,
    /// Last value, likewise.
    Last,
    /// Sum of squared deviations from the group's mean, float64.
    M2,
    /// Partial `M2`s of one group merged (Chan et al.): the input column holds the
    /// partials' `M2`, `count` and `sum` name their counts and sums.
    MergeM2 { count: String, sum: String },
}

/// Short strings numbered through a list before a hash map takes over.
const FEW_STRINGS: usize = 8;

/// Each string's number in order of first appearance in this frame (codes local to it:
/// a group's key values are read back from its first row).
fn string_codes(s: &Series) -> PolarsResult<Series> {
    let ca = s.str()?;
    if ca.null_count() == 0 {
        // Strings of at most 12 bytes are whole in their 16-byte view (length, bytes):
        // equal views are equal strings, so a short key hashes one u128, not its text.
        // The first few short strings are looked up in a list (a flag's or a status'
        // handful of values), later ones in a hash map.
        let mut few: Vec<u128> = Vec::new();
        let mut short: HashMap<u128, i64> = HashMap::new();
        let mut long: HashMap<&str, i64> = HashMap::new();
        let mut v = Vec::with_capacity(ca.len());
        for arr in ca.downcast_iter() {
            for (i, view) in arr.views().iter().enumerate() {
                let next = (few.len() + short.len() + long.len()) as i64;
                let code = if view.length <= 12 {
                    // Only the length and its bytes: padding is zero by the format, but
                    // a buffer from elsewhere is not trusted to keep it.
                    let key = view.as_u128() & (u128::MAX >> (96 - 8 * view.length));
                    match few.iter().position(|&f| f == key) {
                        Some(at) => at as i64,
                        None if few.len() < FEW_STRINGS && short.is_empty() && long.is_empty() => {
                            few.push(key);
                            next
                        }
                        None => *short.entry(key).or_insert(next),
                    }
                } else {
                    *long.entry(arr.value(i)).or_insert(next)
                };
                v.push(code);
            }
        }
        return Ok(Series::new(s.name().clone(), v));
    }
    let mut codes: HashMap<&str, i64> = HashMap::new();
    let v: Vec<i64> = ca
        .iter()
        .map(|x| {
            let next = codes.len() as i64;
            *codes.entry(x.unwrap_or_default()).or_insert(next)
        })
        .collect();
    Ok(Series::new(s.name().clone(), v))
}

/// Several integer or string keys without missing values packed into one `i64` (each
/// key offset by its minimum in this frame, strings numbered, times the product of the
/// later keys' ranges), when their ranges multiply to less than 2⁶²; `None` otherwise.
pub(crate) fn packed_key(df: &DataFrame, keys: &[String]) -> PolarsResult<Option<Vec<i64>>> {
    let Some(values) = key_values(df, keys.iter().map(String::as_str))? else { return Ok(None) };
    Ok(pack(&values, df.height()).map(|(packed, _)| packed))
}

/// Each of `columns` as `i64`s (integers and times by value, strings numbered in order
/// of first appearance); `None` when one has missing values or another dtype.
fn key_values<'a>(df: &DataFrame, columns: impl Iterator<Item = &'a str>) -> PolarsResult<Option<Vec<Vec<i64>>>> {
    let mut values = Vec::new();
    for k in columns {
        let s = df.column(k)?.as_materialized_series();
        if s.null_count() > 0 {
            return Ok(None);
        }
        let v = if s.dtype() == &DataType::String {
            string_codes(s)?.i64()?.into_no_null_iter().collect()
        } else {
            match key_ints(s)? {
                Some(v) => v,
                None => return Ok(None),
            }
        };
        values.push(v);
    }
    Ok(Some(values))
}

/// The rows of `df` whose `subset` values were not seen in an earlier row (missing
/// values equal each other): for integer, time and string keys without missing values,
/// each key's first row from the packed keys' numbering (in order of first appearance);
/// else polars' stable unique.
pub(crate) fn first_rows(df: &DataFrame, subset: &[String]) -> PolarsResult<DataFrame> {
    if !subset.is_empty()
        && let Some(key) = packed_key(df, subset)?
    {
        let (_, _, first) = KeyTable::number(&key);
        return df.take(&IdxCa::from_vec(PlSmallStr::EMPTY, first));
    }
    df.unique_stable(Some(subset), UniqueKeepStrategy::First, None)
}

/// Per group of `keys`, the number of distinct values of `value` (a `nunique`
/// group-by finished in one pass): each group's first row in `df` and its count, groups
/// in order of their packed keys (key order for integer and time keys). By sorting the
/// packed (keys, value) pairs rather than hashing them: the pairs of a shuffle's
/// partition are mostly distinct, and a hash table of millions of them misses the cache
/// on every row. `None` when a column is not an integer, time or string column without
/// missing values, or the ranges do not pack into an `i64`.
pub(crate) fn distinct_counts(
    df: &DataFrame,
    keys: &[String],
    value: &str,
) -> PolarsResult<Option<(Vec<IdxSize>, Vec<i64>)>> {
    let Some(values) = key_values(df, keys.iter().map(String::as_str).chain([value]))? else { return Ok(None) };
    let rows = df.height();
    let (mut first, mut counts) = (Vec::new(), Vec::<i64>::new());
    // Rows already in key order (a file sorted by the key, a shuffle of one): each run
    // of a key is a group, its distinct values counted within the run.
    let Some((group, _)) = pack(&values[..keys.len()], rows) else { return Ok(None) };
    if group.windows(2).all(|w| w[0] <= w[1]) {
        let (value, mut run) = (&values[keys.len()], Vec::new());
        let mut start = 0;
        while start < rows {
            let end = start + group[start..].iter().take_while(|&&g| g == group[start]).count();
            run.clear();
            run.extend_from_slice(&value[start..end]);
            run.sort_unstable();
            run.dedup();
            first.push(start as IdxSize);
            counts.push(run.len() as i64);
            start = end;
        }
        return Ok(Some((first, counts)));
    }
    let Some((packed, bounds)) = pack(&values, rows) else { return Ok(None) };
    let per_group = bounds.last().map_or(1, |b| b.1) as u64;
    // Packed values are 0 ≤ p < 2^62: unsigned order is theirs.
    let mut pairs: Vec<(u64, IdxSize)> = packed.iter().enumerate().map(|(r, &p)| (p as u64, r as IdxSize)).collect();
    radix_sort(&mut pairs);
    let mut last: Option<u64> = None;
    for &(p, row) in &pairs {
        match last {
            Some(q) if q == p => continue,
            Some(q) if q / per_group == p / per_group => *counts.last_mut().expect("a group") += 1,
            _ => {
                first.push(row);
                counts.push(1);
            }
        }
        last = Some(p);
    }
    Ok(Some((first, counts)))
}

/// Sorts `(key, row)` pairs by key (least significant digit first, 11 bits a pass, only
/// as many passes as the greatest key has bits); stable, so equal keys keep row order.
fn radix_sort(pairs: &mut Vec<(u64, IdxSize)>) {
    const BITS: u32 = 11;
    let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
    let bits = 64 - max.leading_zeros();
    let mut other = vec![(0u64, 0 as IdxSize); pairs.len()];
    let mut shift = 0;
    while shift < bits {
        let mut count = vec![0usize; 1 << BITS];
        let digit = |k: u64| ((k >> shift) & ((1 << BITS) - 1)) as usize;
        for p in pairs.iter() {
            count[digit(p.0)] += 1;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        for &p in pairs.iter() {
            let d = digit(p.0);
            other[count[d]] = p;
            count[d] += 1;
        }
        std::mem::swap(pairs, &mut other);
        shift += BITS;
    }
}

/// A key column's values as `i64`, for integer and time dtypes (`None` for others, and
/// for a uint64 beyond i64, which a plain cast would make missing, then 0).
pub(crate) fn key_ints(s: &Series) -> PolarsResult<Option<Vec<i64>>> {
    let d = s.dtype();
    let ints = if d.is_integer() {
        s.strict_cast(&DataType::Int64)
    } else if crate::expr::is_temporal(d) || crate::temporal::is_duration(d) {
        s.to_physical_repr().strict_cast(&DataType::Int64)
    } else {
        return Ok(None);
    };
    let Ok(ints) = ints else { return Ok(None) };
    Ok(Some(ints.i64()?.into_no_null_iter().collect()))
}

/// A packed key's least value and range.
pub(crate) type Bound = (i64, i64);

/// Several keys' values (`rows` each) packed into one `i64` per row: each key offset by
/// its least value, times the product of the later keys' ranges; with each key's least
/// value and range. `None` when the ranges multiply to 2⁶² or more.
pub(crate) fn pack(values: &[Vec<i64>], rows: usize) -> Option<(Vec<i64>, Vec<Bound>)> {
    let mut span: u128 = 1;
    let mut bounds = Vec::with_capacity(values.len());
    for v in values {
        let (lo, hi) = (v.iter().copied().min().unwrap_or(0), v.iter().copied().max().unwrap_or(0));
        let range = hi as i128 - lo as i128 + 1;
        span = span.saturating_mul(range as u128);
        if span >= 1 << 62 {
            return None;
        }
        bounds.push((lo, range as i64));
    }
    let mut packed = vec![0i64; rows];
    for (v, (lo, range)) in values.iter().zip(&bounds) {
        for (p, x) in packed.iter_mut().zip(v) {
            *p = *p * range + (x - lo);
        }
    }
    Some((packed, bounds))
}

/// Keys spanning at most this many values (or 16 slots a row) use a dense table.
const DENSE_SPAN: u64 = 1 << 22;

/// The groups of `df` by `keys`: each group's key values, each row's group number, and
/// the number of groups. No keys: every row in one group. Missing keys (which group-bys
/// drop first) form groups of their own, through polars.
pub(crate) fn groups(df: &DataFrame, keys: &[String]) -> PolarsResult<(Vec<Column>, Vec<u32>, usize)> {
    if keys.is_empty() {
        return Ok((Vec::new(), vec![0; df.height()], 1));
    }
    if let Some(key) = packed_key(df, keys)? {
        let (_, ids, first) = KeyTable::number(&key);
        let n = first.len();
        let first = IdxCa::from_vec(PlSmallStr::EMPTY, first);
        let cols = df.select(keys.iter().map(|k| k.as_str()))?.take(&first)?.columns().to_vec();
        return Ok((cols, ids, n));
    }
    let gb = df.group_by(keys.iter().map(|k| k.as_str()))?;
    let mut ids = vec![0u32; df.height()];
    let n = match &**gb.get_groups() {
        GroupsType::Idx(g) => {
            for (gi, rows) in g.all().iter().enumerate() {
                for &r in rows.iter() {
                    ids[r as usize] = gi as u32;
                }
            }
            g.all().len()
        }
        GroupsType::Slice { groups, .. } => {
            for (gi, [first, len]) in groups.iter().enumerate() {
                ids[*first as usize..(*first + *len) as usize].fill(gi as u32);
            }
            groups.len()
        }
    };
    Ok((gb.keys(), ids, n))
}

/// `rule` over the values of `s`, per group (`ids` numbers each row's group). `df` holds
/// the other columns a rule may read.
pub(crate) fn apply(s: &Series, rule: &Rule, df: &DataFrame, ids: &[u32], n: usize) -> PolarsResult<Series> {
    let name = PlSmallStr::EMPTY;
    match rule {
        Rule::Size => {
            let mut acc = vec![0i64; n];
            for &g in ids {
                acc[g as usize] += 1;
            }
            Ok(Series::new(name, acc))
        }
        Rule::Count => {
            let mut acc = vec![0i64; n];
            if s.null_count() == 0 && !s.dtype().is_float() {
                for &g in ids {
                    acc[g as usize] += 1;
                }
                return Ok(Series::new(name, acc));
            }
            for (m, &g) in missing(s)?.iter().zip(ids) {
                acc[g as usize] += i64::from(m == Some(false));
            }
            Ok(Series::new(name, acc))
        }
        Rule::First | Rule::Last => {
            let mut pick: Vec<Option<IdxSize>> = vec![None; n];
            for (row, (m, &g)) in missing(s)?.iter().zip(ids).enumerate() {
                let p = &mut pick[g as usize];
                if m == Some(false) && (p.is_none() || *rule == Rule::Last) {
                    *p = Some(row as IdxSize);
                }
            }
            s.take(&IdxCa::from_iter_options(name, pick.into_iter()))
        }
        Rule::M2 => {
            let v = s.cast(&DataType::Float64)?;
            let v = v.f64()?;
            let (mut count, mut sum) = (vec![0f64; n], vec![0f64; n]);
            for (x, &g) in v.iter().zip(ids) {
                if let Some(x) = x.filter(|x| !x.is_nan()) {
                    count[g as usize] += 1.0;
                    sum[g as usize] += x;
                }
            }
            let mut m2 = vec![0f64; n];
            for (x, &g) in v.iter().zip(ids) {
                if let Some(x) = x.filter(|x| !x.is_nan()) {
                    let d = x - sum[g as usize] / count[g as usize];
                    m2[g as usize] += d * d;
                }
            }
            Ok(Series::new(name, m2))
        }
        Rule::MergeM2 { count, sum } => {
            let col = |c: &str| df.column(c)?.as_materialized_series().cast(&DataType::Float64);
            let (c, t, m) = (col(count)?, col(sum)?, s.cast(&DataType::Float64)?);
            let (c, t, m) = (c.f64()?, t.f64()?, m.f64()?);
            let (mut nn, mut ss) = (vec![0f64; n], vec![0f64; n]);
            for ((ci, ti), &g) in c.iter().zip(t.iter()).zip(ids) {
                nn[g as usize] += ci.unwrap_or(0.0);
                ss[g as usize] += ti.unwrap_or(0.0);
            }
            // M2 = Σ M2ᵢ + Σ nᵢ (meanᵢ − mean)², over the partials with values.
            let mut out = vec![0f64; n];
            for (((ci, ti), mi), &g) in c.iter().zip(t.iter()).zip(m.iter()).zip(ids) {
                let (Some(ci), Some(ti)) = (ci, ti) else { continue };
                if ci > 0.0 {
                    let d = ti / ci - ss[g as usize] / nn[g as usize];
                    out[g as usize] += mi.unwrap_or(0.0) + ci * d * d;
                }
            }
            Ok(Series::new(name, out))
        }
        Rule::Sum | Rule::Min | Rule::Max => {
            if s.dtype().is_float() {
                let v = s.cast(&DataType::Float64)?;
                Ok(fold_numbers(v.f64()?, ids, n, rule, |a, b| a + b, |x: &f64| x.is_nan()))
            } else if s.dtype().is_integer() || s.dtype() == &DataType::Boolean || *rule == Rule::Sum {
                let v = s.cast(&DataType::Int64)?;
                Ok(fold_numbers(v.i64()?, ids, n, rule, i64::wrapping_add, |_: &i64| false))
            } else if s.dtype() == &DataType::String {
                Ok(fold(s.str()?.iter(), ids, n, rule, |a, _| a, |_: &&str| false))
            } else {
                let phys = s.to_physical_repr().cast(&DataType::Int64)?;
                Ok(fold(phys.i64()?.iter(), ids, n, rule, i64::wrapping_add, |_: &i64| false))
            }
        }
    }
}

/// Groups at most this many get a sum's four accumulator lanes.
const SUM_LANES_GROUPS: usize = 256;

/// [`fold`] of a numeric column: a sum over each chunk's values directly when it has no
/// nulls (an `Option` iterator per value cost ~a fifth of a scan-and-group query).
fn fold_numbers<T>(
    ca: &ChunkedArray<T>,
    ids: &[u32],
    n: usize,
    rule: &Rule,
    add: fn(T::Native, T::Native) -> T::Native,
    skip: fn(&T::Native) -> bool,
) -> Series
where
    T: PolarsNumericType,
    T::Native: Copy + Default + PartialOrd,
    Series: NamedFrom<Vec<T::Native>, [T::Native]> + NamedFrom<Vec<Option<T::Native>>, [Option<T::Native>]>,
{
    // Extremes, and columns with nulls, take the general fold.
    if ca.null_count() > 0 || *rule != Rule::Sum {
        return fold(ca.iter(), ids, n, rule, add, skip);
    }
    // With few groups, consecutive rows mostly add to the same accumulator and each add
    // waits for the last: four lanes (row i in lane i % 4) overlap them.
    let lanes = if n <= SUM_LANES_GROUPS { 4 } else { 1 };
    let mut acc = vec![T::Native::default(); n * lanes];
    let mut at = 0;
    for arr in ca.downcast_iter() {
        let values = arr.values().as_slice();
        for (i, (&x, &g)) in values.iter().zip(&ids[at..at + values.len()]).enumerate() {
            if !skip(&x) {
                let a = g as usize * lanes + (at + i) % lanes;
                acc[a] = add(acc[a], x);
            }
        }
        at += values.len();
    }
    let sums: Vec<T::Native> = acc.chunks(lanes).map(|l| l.iter().skip(1).fold(l[0], |s, &x| add(s, x))).collect();
    Series::new(PlSmallStr::EMPTY, sums)
}

/// Group numbers of `i64` keys: a dense table when they span a small range, a hash map
/// otherwise.
pub(crate) enum KeyTable {
    Dense { lo: i64, slot: Vec<u32> },
    Hash(HashMap<i64, u32>),
}

impl KeyTable {
    /// The table of `key` (keys numbered in order of first appearance), each row's
    /// number, and each number's first row.
    pub(crate) fn number(key: &[i64]) -> (KeyTable, Vec<u32>, Vec<IdxSize>) {
        let mut ids = Vec::with_capacity(key.len());
        let mut first: Vec<IdxSize> = Vec::new();
        let (Some(&lo), Some(&hi)) = (key.iter().min(), key.iter().max()) else {
            return (KeyTable::Hash(HashMap::new()), ids, first);
        };
        // As wide as 2^64 for keys from i64::MIN to i64::MAX.
        let span = (hi as i128 - lo as i128 + 1) as u128;
        // A dense table costs its span to clear (4 bytes a slot) and, for keys in order
        // (a sorted file's, a shuffle's), reads it in order; a hash map costs a likely
        // cache miss per row.
        if span <= u128::from(DENSE_SPAN.max(16 * key.len() as u64)) {
            let mut slot = vec![u32::MAX; span as usize];
            for (row, &k) in key.iter().enumerate() {
                let s = &mut slot[k.wrapping_sub(lo) as usize];
                if *s == u32::MAX {
                    *s = first.len() as u32;
                    first.push(row as IdxSize);
                }
                ids.push(*s);
            }
            return (KeyTable::Dense { lo, slot }, ids, first);
        }
        // Sized for the rows up front (a chunk of mostly distinct keys would otherwise
        // rehash as it grows), within bounds.
        let mut map: HashMap<i64, u32> = HashMap::with_capacity(key.len().min(1 << 22));
        for (row, &k) in key.iter().enumerate() {
            let next = first.len() as u32;
            let id = *map.entry(k).or_insert_with(|| {
                first.push(row as IdxSize);
                next
            });
            ids.push(id);
        }
        (KeyTable::Hash(map), ids, first)
    }

    /// The number of `k`, if it was among the keys.
    pub(crate) fn get(&self, k: i64) -> Option<u32> {
        match self {
            KeyTable::Dense { lo, slot } => {
                let i = usize::try_from(k.checked_sub(*lo)?).ok()?;
                slot.get(i).copied().filter(|&s| s != u32::MAX)
            }
            KeyTable::Hash(map) => map.get(&k).copied(),
        }
    }
}

/// Folds the values of one column into per-group accumulators by `rule` (a sum with
/// `add`, or an extreme), skipping values for which `skip` holds (NaN, as pandas skips
/// it).
fn fold<T>(
    values: impl Iterator<Item = Option<T>>,
    ids: &[u32],
    n: usize,
    rule: &Rule,
    add: fn(T, T) -> T,
    skip: fn(&T) -> bool,
) -> Series
where
    T: Copy + Default + PartialOrd,
    Series: NamedFrom<Vec<T>, [T]> + NamedFrom<Vec<Option<T>>, [Option<T>]>,
{
    let name = PlSmallStr::EMPTY;
    match rule {
        Rule::Sum => {
            let mut acc = vec![T::default(); n];
            for (x, &g) in values.zip(ids) {
                if let Some(x) = x.filter(|x| !skip(x)) {
                    acc[g as usize] = add(acc[g as usize], x);
                }
            }
            Series::new(name, acc)
        }
        Rule::Min | Rule::Max => {
            let mut acc: Vec<Option<T>> = vec![None; n];
            let max = *rule == Rule::Max;
            for (x, &g) in values.zip(ids) {
                let Some(x) = x.filter(|x| !skip(x)) else { continue };
                let a = &mut acc[g as usize];
                *a = Some(match *a {
                    Some(y) if (max && y >= x) || (!max && y <= x) => y,
                    _ => x,
                });
            }
            Series::new(name, acc)
        }
        other => unreachable!("{other:?} is not a fold"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_codes_number_short_and_long_strings_alike() {
        let s = Series::new(
            "s".into(),
            ["", "a", "twelve bytes", "a", "thirteen byte", "", "thirteen byte", "twelve bytes"],
        );
        let codes: Vec<i64> = string_codes(&s).unwrap().i64().unwrap().into_no_null_iter().collect();
        assert_eq!(codes, vec![0, 1, 2, 1, 3, 0, 3, 2]);
        // Past the list's few values, a hash map numbers the rest in the same order.
        let many: Vec<String> = (0..20).chain(0..20).map(|i| format!("s{}", i % 11)).collect();
        let s = Series::new("s".into(), many);
        let codes: Vec<i64> = string_codes(&s).unwrap().i64().unwrap().into_no_null_iter().collect();
        let want: Vec<i64> = (0..20).chain(0..20).map(|i| i % 11).collect();
        assert_eq!(codes, want);
    }

    #[test]
    fn radix_sort_orders_keys_stably() {
        let keys = [5u64, 1 << 40, 3, 5, 0, (1 << 40) + 7, 3];
        let mut pairs: Vec<(u64, IdxSize)> = keys.iter().enumerate().map(|(r, &k)| (k, r as IdxSize)).collect();
        let mut want = pairs.clone();
        want.sort_by_key(|p| p.0);
        radix_sort(&mut pairs);
        assert_eq!(pairs, want);
    }

    #[test]
    fn distinct_counts_count_each_groups_values() {
        let df = df!("k" => [3i64, 1, 3, 3, 1, 2], "v" => ["a", "b", "a", "c", "b", "z"]).unwrap();
        let (first, counts) = distinct_counts(&df, &["k".to_string()], "v").unwrap().unwrap();
        assert_eq!((first, counts), (vec![1, 5, 0], vec![1, 1, 2]));
        // In key order: counted run by run, as the sort counts them.
        let sorted = df!("k" => [1i64, 1, 2, 3, 3, 3], "v" => ["b", "b", "z", "a", "c", "a"]).unwrap();
        let (first, counts) = distinct_counts(&sorted, &["k".to_string()], "v").unwrap().unwrap();
        assert_eq!((first, counts), (vec![0, 2, 3], vec![1, 1, 2]));
        let missing = df!("k" => [1i64, 1], "v" => [Some(1i64), None]).unwrap();
        assert!(distinct_counts(&missing, &["k".to_string()], "v").unwrap().is_none());
    }

    #[test]
    fn keys_spanning_every_i64_are_numbered() {
        // Their span, 2^64, once wrapped to an empty dense table, and the worker panicked.
        let (table, ids, first) = KeyTable::number(&[i64::MIN, i64::MAX, i64::MIN, 0]);
        assert_eq!((ids, first), (vec![0, 1, 0, 2], vec![0, 1, 3]));
        assert_eq!((table.get(i64::MAX), table.get(1)), (Some(1), None));
    }
}
