//! Chunk kernels of the row-set operations: first/last/top rows, duplicate removal and
//! joins. Pure functions of polars frames, like `kernels`.

use polars::prelude::*;

use crate::kernels::concat;
use crate::spec::{How, JoinSpec, SortSpec, TopSpec};

fn sort_options(spec: &SortSpec) -> SortMultipleOptions {
    SortMultipleOptions::new()
        .with_order_descending_multi(spec.descending.clone())
        .with_nulls_last(true)
        .with_maintain_order(true)
        .with_multithreaded(false)
}

/// The first (or last) `n` rows of `frames` taken in order, after a stable sort when the
/// spec has one (rows missing a sort value left out, as pandas' `nlargest` does).
/// Applied to each chunk and again to the survivors, it gives the whole frame's answer.
pub(crate) fn top(spec: &TopSpec, frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut df = concat(frames)?;
    match &spec.order {
        Some(order) if spec.sorted => df = crate::kernels::sort_range(order, vec![df])?,
        Some(order) => {
            df = crate::kernels::drop_missing(&df, &order.by)?;
            df = df.sort(order.by.iter().map(|k| k.as_str()), sort_options(order))?;
        }
        None => {}
    }
    let n = usize::try_from(spec.n).unwrap_or(usize::MAX).min(df.height());
    Ok(if spec.tail { df.tail(Some(n)) } else { df.head(Some(n)) })
}

/// The rows of `frames` (in order) whose `subset` values were not seen in an earlier
/// row: pandas' `drop_duplicates(keep="first")`. Missing values equal each other.
pub(crate) fn unique(subset: &[String], frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    crate::hashagg::first_rows(&concat(frames)?, subset)
}

/// The columns of one side, overlapping non-key names suffixed as pandas does.
pub(crate) fn suffixed(df: DataFrame, both: &[String], suffix: &str) -> PolarsResult<DataFrame> {
    let mut df = df;
    for c in both {
        df.rename(c, format!("{c}{suffix}").into())?;
    }
    Ok(df)
}

/// `left` merged with `right` on the spec's keys (pandas' `merge(on=..)`): keys once,
/// then the left's other columns, then the right's. Missing keys match each other, as
/// pandas' do. Matched rows come in the left's order (the right's for a right join).
pub(crate) fn join(spec: &JoinSpec, left: Vec<DataFrame>, right: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let (left, right) = (suffixed(concat(left)?, &spec.both, "_x")?, suffixed(concat(right)?, &spec.both, "_y")?);
    let how = match spec.how {
        How::Inner => JoinType::Inner,
        How::Left => JoinType::Left,
        How::Right => JoinType::Right,
        How::Outer => JoinType::Full,
    };
    let order = match spec.how {
        How::Right => MaintainOrderJoin::RightLeft,
        _ => MaintainOrderJoin::LeftRight,
    };
    let args = JoinArgs {
        nulls_equal: true,
        coalesce: JoinCoalesce::CoalesceColumns,
        maintain_order: order,
        ..JoinArgs::new(how)
    };
    let out = left.join(&right, &spec.on, &spec.on, args, None)?;
    // Keys first, then the left's columns, then the right's (polars puts a right
    // join's keys among the right's columns).
    let mut names: Vec<String> = spec.on.clone();
    for c in left.get_column_names().into_iter().chain(right.get_column_names()) {
        if !names.iter().any(|n| n == c.as_str()) {
            names.push(c.to_string());
        }
    }
    out.select(names.iter().map(|n| n.as_str()))
}

/// How one key column becomes an `i64` alike on both sides of a join: its integer (or
/// physical time) value, or a string's number in the built side's dictionary.
enum Code {
    Int,
    Str(hashbrown::HashMap<String, i64>),
    /// A float's number by its bits (0.0 and -0.0 alike, every NaN alike: pandas
    /// matches NaN keys with each other).
    Float(hashbrown::HashMap<u64, i64>),
}

/// The bits a float key is numbered by.
fn float_bits(x: f64) -> u64 {
    if x.is_nan() { f64::NAN.to_bits() } else { (x + 0.0).to_bits() }
}

/// One side of a broadcast join made ready to be probed by the other side's chunks: its
/// rows (mapped, gathered, suffixed) and an index from key to rows, built once per worker
/// process and kept for the next chunk of the same join (see `tasks::join_rows`).
pub(crate) struct Built {
    frame: DataFrame,
    /// Per key: its dtype, code, least value and range (the keys are packed into one
    /// `i64`, as a group-by packs them).
    codes: Vec<(DataType, Code, i64, i64)>,
    table: crate::hashagg::KeyTable,
    /// The rows of key number `g`, in row order: `rows[start[g]..start[g + 1]]`.
    rows: Vec<IdxSize>,
    start: Vec<usize>,
}

impl Built {
    /// `frame` (one side, suffixed) indexed by the spec's keys; `None` when a key has
    /// missing values (they match each other, as pandas'), a dtype other than integers,
    /// floats, times and strings, or the keys span too much to pack: the join then goes
    /// to polars.
    pub(crate) fn new(spec: &JoinSpec, frame: DataFrame) -> PolarsResult<Option<Built>> {
        let mut codes = Vec::with_capacity(spec.on.len());
        let mut values = Vec::with_capacity(spec.on.len());
        for k in &spec.on {
            let s = frame.column(k)?.as_materialized_series();
            if s.null_count() > 0 {
                return Ok(None);
            }
            let (code, v) = if s.dtype() == &DataType::String {
                let mut dict: hashbrown::HashMap<String, i64> = hashbrown::HashMap::new();
                let v = s
                    .str()?
                    .iter()
                    .map(|x| {
                        let x = x.unwrap_or_default();
                        let next = dict.len() as i64;
                        *dict.entry_ref(x).or_insert(next)
                    })
                    .collect();
                (Code::Str(dict), v)
            } else if s.dtype().is_float() {
                let mut dict: hashbrown::HashMap<u64, i64> = hashbrown::HashMap::new();
                let f = s.cast(&DataType::Float64)?;
                let v = f
                    .f64()?
                    .into_no_null_iter()
                    .map(|x| {
                        let next = dict.len() as i64;
                        *dict.entry(float_bits(x)).or_insert(next)
                    })
                    .collect();
                (Code::Float(dict), v)
            } else {
                match crate::hashagg::key_ints(s)? {
                    Some(v) => (Code::Int, v),
                    None => return Ok(None),
                }
            };
            codes.push((s.dtype().clone(), code));
            values.push(v);
        }
        let Some((packed, bounds)) = crate::hashagg::pack(&values, frame.height()) else { return Ok(None) };
        let codes = codes.into_iter().zip(bounds).map(|((d, c), (lo, range))| (d, c, lo, range)).collect();
        let (table, ids, first) = crate::hashagg::KeyTable::number(&packed);
        let (rows, start) = crate::order::group_rows(&ids, first.len());
        Ok(Some(Built { frame, codes, table, rows, start }))
    }

    /// About the bytes it holds: its rows, its index and its dictionaries.
    pub(crate) fn bytes(&self) -> usize {
        let table = match &self.table {
            crate::hashagg::KeyTable::Dense { slot, .. } => 4 * slot.len(),
            crate::hashagg::KeyTable::Hash(map) => 16 * map.capacity(),
        };
        let dicts: usize = self
            .codes
            .iter()
            .map(|(_, c, ..)| match c {
                Code::Int => 0,
                Code::Str(d) => d.keys().map(|k| k.len() + 32).sum(),
                Code::Float(d) => 24 * d.len(),
            })
            .sum();
        self.frame.estimated_size() + table + 4 * self.rows.len() + 8 * self.start.len() + dicts
    }

    /// Each row's group of this side (`None`: no row of this side has its key); `None`
    /// in all when the keys cannot be coded alike (missing values, other dtypes).
    fn probe_groups(&self, spec: &JoinSpec, df: &DataFrame) -> PolarsResult<Option<Vec<Option<u32>>>> {
        // One integer key (the usual foreign key): looked up straight from the column.
        if let [k] = &spec.on[..]
            && let [(dtype, Code::Int, lo, range)] = &self.codes[..]
        {
            let s = df.column(k)?.as_materialized_series();
            if s.null_count() > 0 || s.dtype() != dtype {
                return Ok(None);
            }
            let Some(v) = crate::hashagg::key_ints(s)? else { return Ok(None) };
            let group = |x: i64| offset(x, *lo, *range).and_then(|d| self.table.get(d));
            return Ok(Some(v.into_iter().map(group).collect()));
        }
        let Some(keys) = self.probe_keys(spec, df)? else { return Ok(None) };
        Ok(Some(keys.into_iter().map(|k| k.and_then(|k| self.table.get(k))).collect()))
    }

    /// Each row's packed key in this side's coding (`None`: no row of this side has
    /// it); `None` in all when the keys cannot be coded alike (missing values, other
    /// dtypes).
    fn probe_keys(&self, spec: &JoinSpec, df: &DataFrame) -> PolarsResult<Option<Vec<Option<i64>>>> {
        let mut packed: Vec<Option<i64>> = vec![Some(0); df.height()];
        for (k, (dtype, code, lo, range)) in spec.on.iter().zip(&self.codes) {
            let s = df.column(k)?.as_materialized_series();
            if s.null_count() > 0 || s.dtype() != dtype {
                return Ok(None);
            }
            let put = |p: &mut Option<i64>, x: Option<i64>| {
                *p = match (*p, x) {
                    (Some(p), Some(x)) => offset(x, *lo, *range).map(|d| p * range + d),
                    _ => None,
                }
            };
            match code {
                Code::Str(dict) => {
                    for (p, x) in packed.iter_mut().zip(s.str()?.iter()) {
                        put(p, x.and_then(|x| dict.get(x)).copied());
                    }
                }
                Code::Float(dict) => {
                    let f = s.cast(&DataType::Float64)?;
                    for (p, x) in packed.iter_mut().zip(f.f64()?.into_no_null_iter()) {
                        put(p, dict.get(&float_bits(x)).copied());
                    }
                }
                Code::Int => {
                    let Some(v) = crate::hashagg::key_ints(s)? else { return Ok(None) };
                    for (p, x) in packed.iter_mut().zip(v) {
                        put(p, Some(x));
                    }
                }
            }
        }
        Ok(Some(packed))
    }
}

/// `x`'s place in a packed key's range `[lo, lo + range)`, if it is in it.
fn offset(x: i64, lo: i64, range: i64) -> Option<i64> {
    x.checked_sub(lo).filter(|d| (0..range).contains(d))
}

/// `probe` (a chunk of the other side) joined with `built` as [`join`] would join them
/// (`built_right`: the built side is the right one), for inner joins, left joins with the
/// right built and right joins with the left built; `None` when the keys cannot be
/// coded alike (see [`Built::new`]).
pub(crate) fn join_built(
    spec: &JoinSpec,
    built: &Built,
    probe: DataFrame,
    built_right: bool,
) -> PolarsResult<Option<DataFrame>> {
    let probe = suffixed(probe, &spec.both, if built_right { "_x" } else { "_y" })?;
    let Some(groups) = built.probe_groups(spec, &probe)? else { return Ok(None) };
    let keep_unmatched = match spec.how {
        How::Inner => false,
        How::Left if built_right => true,
        How::Right if !built_right => true,
        _ => {
            polars_bail!(ComputeError: "a {:?} join cannot probe the {} side", spec.how, if built_right { "right" } else { "left" })
        }
    };
    // Built rows by index, `NONE` for a probe row kept without a match.
    const NONE: IdxSize = IdxSize::MAX;
    let (mut p_idx, mut b_idx): (Vec<IdxSize>, Vec<IdxSize>) =
        (Vec::with_capacity(groups.len()), Vec::with_capacity(groups.len()));
    let mut unmatched = false;
    for (row, &g) in groups.iter().enumerate() {
        match g {
            Some(g) => {
                for &b in &built.rows[built.start[g as usize]..built.start[g as usize + 1]] {
                    p_idx.push(row as IdxSize);
                    b_idx.push(b);
                }
            }
            None if keep_unmatched => {
                p_idx.push(row as IdxSize);
                b_idx.push(NONE);
                unmatched = true;
            }
            None => {}
        }
    }
    if spec.how == How::Inner && !built_right {
        // An inner join's rows come in the left's order: here the built side's.
        let (perm, _) = crate::order::group_rows(&b_idx, built.frame.height());
        p_idx = perm.iter().map(|&i| p_idx[i as usize]).collect();
        b_idx = perm.iter().map(|&i| b_idx[i as usize]).collect();
    }
    // Each probe row once, in order (a key into a table of distinct keys, all found):
    // the probe side as it is, not gathered.
    let whole = p_idx.len() == probe.height() && p_idx.iter().enumerate().all(|(i, &r)| r as usize == i);
    let p = if whole { probe } else { probe.take(&IdxCa::from_vec(PlSmallStr::EMPTY, p_idx))? };
    let b = if unmatched && built.frame.height() > 0 {
        // Gathered by plain indices (a missing one as row 0), then made missing by
        // validity: polars gathers by indices with missing ones value by value.
        let present: polars_arrow::bitmap::Bitmap = b_idx.iter().map(|&b| b != NONE).collect();
        let idx: Vec<IdxSize> = b_idx.iter().map(|&b| if b == NONE { 0 } else { b }).collect();
        let gathered = built.frame.take(&IdxCa::from_vec(PlSmallStr::EMPTY, idx))?;
        let cols = gathered.columns().iter().map(|c| missing_where_absent(c, &present)).collect::<PolarsResult<_>>()?;
        DataFrame::new(gathered.height(), cols)?
    } else if unmatched {
        built
            .frame
            .take(&IdxCa::from_iter_options(PlSmallStr::EMPTY, b_idx.into_iter().map(|b| (b != NONE).then_some(b))))?
    } else {
        built.frame.take(&IdxCa::from_vec(PlSmallStr::EMPTY, b_idx))?
    };
    // Keys once (the probing side's: a left join keeps the left's, a right join the
    // right's, and an inner join's are equal), then the left's columns, then the right's.
    let (left, right) = if built_right { (&p, &b) } else { (&b, &p) };
    let mut cols: Vec<Column> = spec.on.iter().map(|k| p.column(k).cloned()).collect::<PolarsResult<_>>()?;
    for side in [left, right] {
        cols.extend(side.columns().iter().filter(|c| !spec.on.iter().any(|k| k == c.name().as_str())).cloned());
    }
    Ok(Some(DataFrame::new(p.height(), cols)?))
}

/// `c` missing where `present` is unset (and where it was missing).
fn missing_where_absent(c: &Column, present: &polars_arrow::bitmap::Bitmap) -> PolarsResult<Column> {
    let s = c.as_materialized_series().rechunk();
    let arr = &s.chunks()[0];
    let validity = match arr.validity() {
        Some(v) => v & present,
        None => present.clone(),
    };
    let arr = arr.with_validity(Some(validity));
    // SAFETY: the array is the column's own, of its physical type; only its validity changed.
    Ok(unsafe { Series::from_chunks_and_dtype_unchecked(s.name().clone(), vec![arr], s.dtype()) }.into_column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_rows_of_the_survivors_are_the_top_rows_of_all() {
        let a = df!("v" => [3i64, 9, 1], "t" => ["a", "b", "c"]).unwrap();
        let b = df!("v" => [9i64, 4], "t" => ["d", "e"]).unwrap();
        let order = Some(SortSpec { by: vec!["v".into()], descending: vec![true] });
        let spec = TopSpec { n: 2, tail: false, order, sorted: false };
        let parts = vec![top(&spec, vec![a.clone()]).unwrap(), top(&spec, vec![b.clone()]).unwrap()];
        let out = top(&spec, parts).unwrap();
        // Ties keep the earlier row first, as pandas' keep="first".
        let t: Vec<&str> = out.column("t").unwrap().str().unwrap().iter().flatten().collect();
        assert_eq!(t, ["b", "d"]);
        let tail = top(&TopSpec { n: 10, tail: true, order: None, sorted: false }, vec![a, b]).unwrap();
        assert_eq!(tail.height(), 5);
    }

    /// The built side's join gives polars' answer, rows and order, for every kind it
    /// serves, both sides built, with integer, string, float and two keys.
    #[test]
    fn a_built_side_joins_as_polars_does() {
        let mut rng = crate::testing::Lcg(7);
        for round in 0..60 {
            let rows = |rng: &mut crate::testing::Lcg, n: usize| {
                let k: Vec<i64> = (0..n).map(|_| (rng.next() % 12) as i64 - 3).collect();
                let t: Vec<String> = (0..n).map(|_| format!("s{}", rng.next() % 5)).collect();
                let v: Vec<i64> = (0..n).map(|_| rng.next() as i64 % 1000).collect();
                let f: Vec<f64> = k.iter().map(|&k| if k == 0 { -0.0 } else { k as f64 / 4.0 }).collect();
                df!("k" => k, "t" => t, "v" => v, "f" => f).unwrap()
            };
            let (nl, nr) = ((rng.next() % 40) as usize, (rng.next() % 40) as usize);
            let (l, r) = (rows(&mut rng, nl), rows(&mut rng, nr));
            let on: Vec<String> = match round % 5 {
                0 => vec!["k".into()],
                1 => vec!["t".into()],
                2 => vec!["f".into()],
                3 => vec!["t".into(), "f".into()],
                _ => vec!["k".into(), "t".into()],
            };
            let both: Vec<String> =
                ["k", "t", "v", "f"].iter().filter(|c| !on.iter().any(|o| o == *c)).map(|c| c.to_string()).collect();
            for (how, right_built) in [(How::Inner, true), (How::Inner, false), (How::Left, true), (How::Right, false)]
            {
                let spec = JoinSpec { on: on.clone(), how, both: both.clone(), keep_left: false };
                let want = join(&spec, vec![l.clone()], vec![r.clone()]).unwrap();
                let (side, probe, suffix) =
                    if right_built { (r.clone(), l.clone(), "_y") } else { (l.clone(), r.clone(), "_x") };
                let built = Built::new(&spec, suffixed(side, &spec.both, suffix).unwrap()).unwrap().unwrap();
                let got = join_built(&spec, &built, probe, right_built).unwrap().unwrap();
                assert!(got.equals_missing(&want), "{how:?} on {on:?}, right built {right_built}:\n{got}\n{want}");
            }
        }
    }

    /// A uint64 key beyond i64 is not coded as 0 (it would match a real 0): such keys
    /// join with polars, and distinct rows keep both.
    #[test]
    fn uint64_keys_beyond_i64_are_never_packed() {
        let big = df!("k" => [u64::MAX, 0u64, u64::MAX - 1]).unwrap();
        let spec = JoinSpec { on: vec!["k".into()], how: How::Inner, both: vec![], keep_left: false };
        assert!(Built::new(&spec, big.clone()).unwrap().is_none());
        assert!(crate::hashagg::packed_key(&big, &["k".into()]).unwrap().is_none());
        assert_eq!(unique(&["k".into()], vec![big]).unwrap().height(), 3);
    }

    #[test]
    fn joins_suffix_overlaps_and_match_missing_keys() {
        let l = df!("k" => [Some(1i64), None, Some(2)], "v" => [10i64, 20, 30]).unwrap();
        let r = df!("k" => [Some(2i64), None, Some(5)], "v" => [200i64, 300, 500]).unwrap();
        let spec = JoinSpec { on: vec!["k".into()], how: How::Inner, both: vec!["v".into()], keep_left: false };
        let out = join(&spec, vec![l.clone()], vec![r.clone()]).unwrap();
        assert_eq!(out.get_column_names(), ["k", "v_x", "v_y"]);
        let vx: Vec<i64> = out.column("v_x").unwrap().i64().unwrap().into_no_null_iter().collect();
        assert_eq!(vx, [20, 30]);
        let outer = join(&JoinSpec { how: How::Outer, ..spec }, vec![l], vec![r]).unwrap();
        assert_eq!(outer.height(), 4);
    }
}
