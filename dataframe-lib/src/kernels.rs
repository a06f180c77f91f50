//! What chunk tasks compute, with polars, on whole chunks: building a chunk from tensor
//! chunks, partial and combined group-by aggregations, hash partitioning, and the steps
//! of a sample sort. Pure functions of frames; `exec` wraps them in remote functions.

use polars::prelude::*;

pub(crate) use crate::hashagg::Rule;
use crate::spec::{Agg, GroupSpec, Part, Scan, ScanSpec, SortSpec};

/// A frame of the named tensor chunks (read in place), one column each.
pub(crate) fn from_tensor_chunks(names: &[String], cols: &[ares_tensor::ChunkRef<'_>]) -> PolarsResult<DataFrame> {
    use ares_tensor::DType;
    let columns: Vec<Column> = names
        .iter()
        .zip(cols)
        .map(|(n, c)| {
            let name = PlSmallStr::from(n.as_str());
            let s = match c.dtype() {
                DType::F64 => Series::new(name, c.elements::<f64>().as_ref()),
                DType::F32 => Series::new(name, c.elements::<f32>().as_ref()),
                DType::I64 => Series::new(name, c.elements::<i64>().as_ref()),
                DType::U64 => Series::new(name, c.elements::<u64>().as_ref()),
                DType::U32 => Series::new(name, c.elements::<u32>().as_ref()),
                // Small integers widen to int32 (see `frame::tensor_dtype`).
                DType::I32 | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
                    Series::new(name, c.elements::<i32>().as_ref())
                }
                DType::Bool => Series::new(name, c.elements::<bool>().as_ref()),
                DType::C64 | DType::C128 => unreachable!("frames refuse complex tensors as columns (from_tensors)"),
            };
            s.into_column()
        })
        .collect();
    DataFrame::new_infer_height(columns)
}

/// Columns `columns` of `df` as one tensor chunk of `dtype`: rows × columns, row-major,
/// or the one column's values when `flat`. Missing values become NaN in a float chunk;
/// an integer or boolean chunk cannot hold them, so a column with any fails, naming it.
pub(crate) fn to_tensor_chunk(
    df: &DataFrame,
    columns: &[String],
    dtype: ares_tensor::DType,
    flat: bool,
) -> PolarsResult<ares_tensor::Chunk> {
    use ares_tensor::DType;
    use ares_tensor::data::Buf;
    let (rows, width) = (df.height(), columns.len());
    /// Every column cast to `to`, interleaved row-major through `values`.
    fn interleave<T: Copy + Default>(
        df: &DataFrame,
        columns: &[String],
        to: DataType,
        missing: Option<T>,
        values: impl Fn(&Series) -> PolarsResult<Vec<Option<T>>>,
    ) -> PolarsResult<Vec<T>> {
        let width = columns.len();
        let mut out = vec![T::default(); df.height() * width];
        for (c, name) in columns.iter().enumerate() {
            let s = df.column(name)?.as_materialized_series().cast(&to)?;
            for (r, v) in values(&s)?.into_iter().enumerate() {
                out[r * width + c] = match (v, missing) {
                    (Some(v), _) => v,
                    (None, Some(m)) => m,
                    (None, None) => polars_bail!(ComputeError:
                        "column {name:?} has missing values, which a {to} tensor cannot hold: fillna, or astype(float64), before to_tensor"),
                };
            }
        }
        Ok(out)
    }
    let data = match dtype {
        DType::F64 => {
            Buf::F64(interleave(df, columns, DataType::Float64, Some(f64::NAN), |s| Ok(s.f64()?.iter().collect()))?)
        }
        DType::F32 => {
            Buf::F32(interleave(df, columns, DataType::Float32, Some(f32::NAN), |s| Ok(s.f32()?.iter().collect()))?)
        }
        DType::I64 => Buf::I64(interleave(df, columns, DataType::Int64, None, |s| Ok(s.i64()?.iter().collect()))?),
        DType::U64 => Buf::U64(interleave(df, columns, DataType::UInt64, None, |s| Ok(s.u64()?.iter().collect()))?),
        DType::U32 => Buf::U32(interleave(df, columns, DataType::UInt32, None, |s| Ok(s.u32()?.iter().collect()))?),
        DType::I32 => Buf::I32(interleave(df, columns, DataType::Int32, None, |s| Ok(s.i32()?.iter().collect()))?),
        small @ (DType::I8 | DType::I16 | DType::U8 | DType::U16) => {
            Buf::I32(interleave(df, columns, DataType::Int32, None, |s| Ok(s.i32()?.iter().collect()))?).cast(small)
        }
        DType::Bool => Buf::Bool(interleave(df, columns, DataType::Boolean, None, |s| Ok(s.bool()?.iter().collect()))?),
        DType::C64 | DType::C128 => unreachable!("no column's dtype promotes to complex (values_dtype)"),
    };
    let shape = if flat { vec![rows as u64] } else { vec![rows as u64, width as u64] };
    Ok(ares_tensor::Chunk { shape, data })
}

/// A frame of the named tensor chunks, owned: their buffers become the columns without
/// a copy (booleans are packed into bits).
pub(crate) fn from_owned_chunks(names: &[String], chunks: Vec<ares_tensor::Chunk>) -> PolarsResult<DataFrame> {
    use ares_tensor::data::Buf;
    let columns: Vec<Column> = names
        .iter()
        .zip(chunks)
        .map(|(n, c)| {
            let name = PlSmallStr::from(n.as_str());
            let s = match c.data {
                Buf::F64(v) => Float64Chunked::from_vec(name, v).into_series(),
                Buf::F32(v) => Float32Chunked::from_vec(name, v).into_series(),
                Buf::I64(v) => Int64Chunked::from_vec(name, v).into_series(),
                Buf::I32(v) => Int32Chunked::from_vec(name, v).into_series(),
                Buf::U64(v) => UInt64Chunked::from_vec(name, v).into_series(),
                Buf::U32(v) => UInt32Chunked::from_vec(name, v).into_series(),
                Buf::Bool(v) => BooleanChunked::from_slice(name, &v).into_series(),
                // Small integers widen to int32 (see `frame::tensor_dtype`).
                small => {
                    let Buf::I32(v) = small.cast(ares_tensor::DType::I32) else { unreachable!("cast to int32") };
                    Int32Chunked::from_vec(name, v).into_series()
                }
            };
            s.into_column()
        })
        .collect();
    DataFrame::new_infer_height(columns)
}

/// The rows of `frames`, one after the other.
pub(crate) fn concat(frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut it = frames.into_iter();
    let Some(mut acc) = it.next() else { polars_bail!(ComputeError: "nothing to concatenate") };
    for f in it {
        acc.vstack_mut_owned(f)?;
    }
    Ok(acc)
}

/// One output column: `rule` over input column `col`, named `out`.
pub(crate) struct Step {
    pub(crate) col: String,
    pub(crate) out: String,
    pub(crate) rule: Rule,
}

/// Groups `df` by `keys` (rows with a missing key dropped, as pandas' default
/// `dropna=True` does; no keys: one group of every row): the key columns, then one
/// column per step, one row per group.
pub(crate) fn aggregate(df: &DataFrame, keys: &[String], steps: &[Step]) -> PolarsResult<DataFrame> {
    let df = drop_missing(df, keys)?;
    let (mut cols, ids, n) = crate::hashagg::groups(&df, keys)?;
    for st in steps {
        let input = df.column(&st.col)?;
        let out = crate::hashagg::apply(input.as_materialized_series(), &st.rule, &df, &ids, n)?;
        let mut out = canonical(out.into_column(), &st.rule, input.dtype())?;
        out.rename(st.out.as_str().into());
        cols.push(out);
    }
    DataFrame::new(n, cols)
}

/// Rows a `nunique` partial samples to decide whether hashing its chunk pays.
const NUNIQUE_SAMPLE: usize = 4096;

/// The distinct rows of `df` among those with no missing `keys` (a `nunique` partial:
/// a missing value is kept once, so that a group of missing values only counts 0).
fn distinct_rows(df: &DataFrame, keys: &[String]) -> PolarsResult<DataFrame> {
    let all: Vec<String> = df.get_column_names().iter().map(|c| c.to_string()).collect();
    crate::hashagg::first_rows(&drop_missing(df, keys)?, &all)
}

/// Per row, whether none of `cols` is missing (null or NaN); `None` for no columns.
fn complete(df: &DataFrame, cols: &[String]) -> PolarsResult<Option<BooleanChunked>> {
    let mut keep: Option<BooleanChunked> = None;
    for c in cols {
        let m = !&crate::eval::missing(df.column(c)?.as_materialized_series())?;
        keep = Some(match keep {
            Some(k) => &k & &m,
            None => m,
        });
    }
    Ok(keep)
}

/// The rows of `df` with no missing value (null or NaN) in `cols`.
pub(crate) fn drop_missing(df: &DataFrame, cols: &[String]) -> PolarsResult<DataFrame> {
    match complete(df, cols)? {
        Some(k) if !k.all() => df.filter(&k),
        _ => Ok(df.clone()),
    }
}

/// The dtype every path gives a step's column, so chunks computed by different paths
/// stack: sums in int64 or float64, counts in int64, extremes in the input's dtype.
pub(crate) fn canonical(c: Column, rule: &Rule, input: &DataType) -> PolarsResult<Column> {
    let to = match rule {
        Rule::Count | Rule::Size => DataType::Int64,
        Rule::Sum if input.is_float() => DataType::Float64,
        Rule::Sum => DataType::Int64,
        Rule::M2 | Rule::MergeM2 { .. } => DataType::Float64,
        Rule::Min | Rule::Max | Rule::First | Rule::Last => input.clone(),
    };
    if c.dtype() == &to { Ok(c) } else { crate::zone::cast(&c, &to) }
}

/// A chunk with `spec`'s running aggregation within groups appended, continuing from
/// `prefix` (the combined partials of the chunks before it): rows in order, each group's
/// value carried from row to row. A row with a missing key, or (but for `cumcount`) a
/// missing value, gets a missing result; the running value skips it.
pub(crate) fn scan(spec: &ScanSpec, mut df: DataFrame, prefix: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    match spec.kind {
        Scan::Shift(0) | Scan::Lead(0) | Scan::Rolling(0, ..) => {
            polars_bail!(ComputeError: "{:?}: a shift or window of no rows", spec.kind)
        }
        Scan::Shift(periods) => return shift(spec, df, prefix, periods as usize),
        Scan::Lead(periods) => return lead(spec, df, prefix, periods as usize),
        Scan::Rolling(window, least, roll) => return rolling(spec, df, prefix, window as usize, least as usize, roll),
        _ => {}
    }
    let keys = &spec.group.keys;
    let (col, agg) = &spec.group.aggs[0];
    let part = GroupSpec::partial_name(0, agg.partials()[0]);
    // Each row's group (none for a missing key), and each group's running start.
    let (key_cols, group, n) = grouped_rows(&df, keys)?;
    let start = match prefix {
        // No keys: one group, the prefix its one partial.
        Some(p) if p.height() > 0 && n > 0 && keys.is_empty() => {
            Some(p.column(&part)?.as_materialized_series().clone())
        }
        Some(p) if p.height() > 0 && n > 0 => {
            let here = DataFrame::new(n, key_cols)?;
            let names: Vec<&str> = keys.iter().map(String::as_str).chain([part.as_str()]).collect();
            let before = p.select(names)?;
            let args = JoinArgs {
                nulls_equal: true,
                maintain_order: MaintainOrderJoin::Left,
                ..JoinArgs::new(JoinType::Left)
            };
            let j = here.join(&before, keys, keys, args, None)?;
            Some(j.column(&part)?.as_materialized_series().clone())
        }
        _ => None,
    };
    let values = df.column(col)?.as_materialized_series().clone();
    let out: Series = match spec.kind {
        Scan::Count => {
            let mut acc: Vec<i64> = match &start {
                Some(s) => s.cast(&DataType::Int64)?.i64()?.iter().map(|v| v.unwrap_or(0)).collect(),
                None => vec![0; n],
            };
            let v: Int64Chunked = group
                .iter()
                .map(|g| {
                    g.map(|g| {
                        let a = &mut acc[g as usize];
                        *a += 1;
                        *a - 1
                    })
                })
                .collect();
            v.into_series()
        }
        kind if values.dtype().is_float() => {
            let init: Vec<Option<f64>> = match &start {
                Some(s) => s.cast(&DataType::Float64)?.f64()?.iter().collect(),
                None => vec![None; n],
            };
            let x = values.cast(&DataType::Float64)?;
            running(kind, init, x.f64()?.iter().map(|v| v.filter(|v| !v.is_nan())), &group, |a, b| a + b)
                .into_series()
                .cast(if kind == Scan::Sum { &DataType::Float64 } else { values.dtype() })?
        }
        kind => {
            let init: Vec<Option<i64>> = match &start {
                Some(s) => s.cast(&DataType::Int64)?.i64()?.iter().collect(),
                None => vec![None; n],
            };
            let x = values.cast(&DataType::Int64)?;
            let duration = crate::temporal::is_duration(values.dtype());
            running(kind, init, x.i64()?.iter(), &group, i64::wrapping_add)
                .into_series()
                .cast(if kind == Scan::Sum && !duration { &DataType::Int64 } else { values.dtype() })?
        }
    };
    df.with_column(out.with_name(spec.name.as_str().into()).into_column())?;
    Ok(df)
}

/// Each group's key values, each row's group (none for a row with a missing key), and
/// the number of groups.
fn grouped_rows(df: &DataFrame, keys: &[String]) -> PolarsResult<(Vec<Column>, Vec<Option<u32>>, usize)> {
    let keyed = complete(df, keys)?.unwrap_or_else(|| BooleanChunked::full(PlSmallStr::EMPTY, true, df.height()));
    let (key_cols, ids, n) = crate::hashagg::groups(&drop_missing(df, keys)?, keys)?;
    let mut row_ids = ids.into_iter();
    let group = keyed.iter().map(|k| if k == Some(true) { row_ids.next() } else { None }).collect();
    Ok((key_cols, group, n))
}

/// The keys and scanned column of `prefix` (earlier rows), then of `df`: the rows a
/// shift looks back over, in order.
fn rows_so_far(spec: &ScanSpec, df: &DataFrame, prefix: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    let names: Vec<&str> = spec.group.keys.iter().map(String::as_str).chain([spec.group.aggs[0].0.as_str()]).collect();
    let here = df.select(names.iter().copied())?;
    match prefix {
        Some(p) if p.height() > 0 => {
            let mut rows = p.select(names)?;
            rows.vstack_mut(&here)?;
            Ok(rows)
        }
        _ => Ok(here),
    }
}

/// The last `periods` rows of each group among the rows so far (`prefix`'s, then
/// `df`'s; keys and the scanned column), in order: what the next chunk's shift looks
/// back at.
pub(crate) fn group_tail(spec: &ScanSpec, df: &DataFrame, prefix: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    let Some(periods) = spec.kind.tail() else { polars_bail!(ComputeError: "group tail rows of a {:?}", spec.kind) };
    // A lead's next chunk looks ahead: the first rows of each group among this chunk's
    // and the later ones (`prefix`); a shift's or a window's, the last of the rows so far.
    let ahead = matches!(spec.kind, Scan::Lead(_));
    let rows = if ahead { rows_then(spec, df, prefix)? } else { rows_so_far(spec, df, prefix)? };
    let (_, group, n) = grouped_rows(&rows, &spec.group.keys)?;
    let mut seen = vec![0u32; n];
    let mut keep = vec![false; rows.height()];
    let mut step = |r: usize, g: &Option<u32>| {
        if let Some(g) = g {
            seen[*g as usize] += 1;
            keep[r] = seen[*g as usize] <= periods;
        }
    };
    if ahead {
        group.iter().enumerate().for_each(|(r, g)| step(r, g));
    } else {
        group.iter().enumerate().rev().for_each(|(r, g)| step(r, g));
    }
    rows.filter(&BooleanChunked::from_slice(PlSmallStr::EMPTY, &keep))
}

/// `df` with each row's value `periods` rows before it in its group appended (missing
/// where there is none, or the key is missing), looking back into `prefix`: the last
/// rows of each group before this chunk ([`group_tail`]).
fn shift(spec: &ScanSpec, df: DataFrame, prefix: Option<&DataFrame>, periods: usize) -> PolarsResult<DataFrame> {
    let rows = rows_so_far(spec, &df, prefix)?;
    let before = rows.height() - df.height();
    shifted(spec, df, &rows, before, periods, false)
}

/// `df` (rows `first..` of `rows`, the keys and scanned column of the rows around it)
/// with each row's value `periods` rows before it in its group appended, or after it
/// when `ahead`; missing where there is none, or the key is missing.
fn shifted(
    spec: &ScanSpec,
    mut df: DataFrame,
    rows: &DataFrame,
    first: usize,
    periods: usize,
    ahead: bool,
) -> PolarsResult<DataFrame> {
    let (_, group, n) = grouped_rows(rows, &spec.group.keys)?;
    // Each group's `periods` rows last passed (walking back, for `ahead`), as row numbers.
    let mut passed: Vec<std::collections::VecDeque<IdxSize>> = vec![std::collections::VecDeque::new(); n];
    let mut take: Vec<Option<IdxSize>> = vec![None; df.height()];
    let mut step = |r: usize, g: &Option<u32>| {
        let Some(g) = g else { return };
        let ring = &mut passed[*g as usize];
        if (first..first + take.len()).contains(&r) && ring.len() >= periods {
            take[r - first] = Some(ring[ring.len() - periods]);
        }
        ring.push_back(r as IdxSize);
        if ring.len() > periods {
            ring.pop_front();
        }
    };
    if ahead {
        group.iter().enumerate().rev().for_each(|(r, g)| step(r, g));
    } else {
        group.iter().enumerate().for_each(|(r, g)| step(r, g));
    }
    let col = rows.column(&spec.group.aggs[0].0)?.as_materialized_series();
    let out = col.take(&IdxCa::from_iter_options(PlSmallStr::EMPTY, take.into_iter()))?;
    df.with_column(out.with_name(spec.name.as_str().into()).into_column())?;
    Ok(df)
}

/// The keys and scanned column of `df`, then of `later` (the first rows of each group
/// after this chunk): the rows a lead looks ahead over, in order.
fn rows_then(spec: &ScanSpec, df: &DataFrame, later: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    let names: Vec<&str> = spec.group.keys.iter().map(String::as_str).chain([spec.group.aggs[0].0.as_str()]).collect();
    let mut rows = df.select(names.iter().copied())?;
    if let Some(l) = later.filter(|l| l.height() > 0) {
        rows.vstack_mut(&l.select(names)?)?;
    }
    Ok(rows)
}

/// `df` with each row's value `periods` rows after it in its group appended (missing
/// where there is none, or the key is missing), looking ahead into `later`: the first
/// rows of each group after this chunk ([`group_tail`] of a lead).
fn lead(spec: &ScanSpec, df: DataFrame, later: Option<&DataFrame>, periods: usize) -> PolarsResult<DataFrame> {
    let rows = rows_then(spec, &df, later)?;
    shifted(spec, df, &rows, 0, periods, true)
}

/// `df` with each row's window appended: `roll` over the row and the `window - 1` rows
/// of its group before it (looking back into `prefix`, the groups' last rows before this
/// chunk), float64, missing where fewer than `least` of them have a value or the key is
/// missing. Sums run with compensation as pandas' do; extremes rescan the window.
fn rolling(
    spec: &ScanSpec,
    mut df: DataFrame,
    prefix: Option<&DataFrame>,
    window: usize,
    least: usize,
    roll: crate::spec::Roll,
) -> PolarsResult<DataFrame> {
    use crate::spec::Roll;
    let rows = rows_so_far(spec, &df, prefix)?;
    let before = rows.height() - df.height();
    let (_, group, n) = grouped_rows(&rows, &spec.group.keys)?;
    let v = rows.column(&spec.group.aggs[0].0)?.as_materialized_series().cast(&DataType::Float64)?;
    // pandas' windows take infinities for missing values, as NaN (`_prep_values`).
    let v: Vec<Option<f64>> = v.f64()?.iter().map(|x| x.filter(|x| x.is_finite())).collect();
    // Per group: its rows in the window (their values), and the compensated sum and
    // count of the present ones.
    struct Win {
        rows: std::collections::VecDeque<Option<f64>>,
        sum: f64,
        carry: f64,
        count: usize,
    }
    fn add(w: &mut Win, x: f64) {
        // Kahan-Babuska: the lost low bits kept in `carry`.
        let t = w.sum + x;
        w.carry += if w.sum.abs() >= x.abs() { (w.sum - t) + x } else { (x - t) + w.sum };
        w.sum = t;
    }
    let mut wins: Vec<Win> =
        (0..n).map(|_| Win { rows: std::collections::VecDeque::new(), sum: 0.0, carry: 0.0, count: 0 }).collect();
    let mut out: Vec<Option<f64>> = Vec::with_capacity(df.height());
    for (r, (g, x)) in group.iter().zip(&v).enumerate() {
        let Some(g) = g else {
            if r >= before {
                out.push(None);
            }
            continue;
        };
        let w = &mut wins[*g as usize];
        w.rows.push_back(*x);
        if let Some(x) = x {
            add(w, *x);
            w.count += 1;
        }
        if w.rows.len() > window
            && let Some(Some(old)) = w.rows.pop_front()
        {
            add(w, -old);
            w.count -= 1;
        }
        if r < before {
            continue;
        }
        let present = w.count;
        out.push(if present < least {
            None
        } else if present == 0 {
            // min_periods=0 over no value: pandas' empty sum is 0, the others missing.
            (roll == Roll::Sum).then_some(0.0)
        } else {
            let values = || w.rows.iter().flatten().copied();
            Some(match roll {
                Roll::Sum => w.sum + w.carry,
                Roll::Mean => (w.sum + w.carry) / present as f64,
                Roll::Min => values().fold(f64::INFINITY, f64::min),
                Roll::Max => values().fold(f64::NEG_INFINITY, f64::max),
            })
        });
    }
    let out = Float64Chunked::from_iter_options(spec.name.as_str().into(), out.into_iter());
    df.with_column(out.into_series().into_column())?;
    Ok(df)
}

/// Running sums or extremes of `values` per group (`group` per row; `init` per group, a
/// sum's missing start being 0): each row's value after it, missing where the row's
/// value or group is.
fn running<T>(
    kind: Scan,
    mut acc: Vec<Option<T>>,
    values: impl Iterator<Item = Option<T>>,
    group: &[Option<u32>],
    add: fn(T, T) -> T,
) -> ChunkedArray<T::PolarsType>
where
    T: NumericNative + Copy + PartialOrd + Default,
    ChunkedArray<T::PolarsType>: FromIterator<Option<T>>,
{
    values
        .zip(group)
        .map(|(v, g)| {
            let (v, g) = (v?, (*g)? as usize);
            let a = acc[g];
            let next = match (kind, a) {
                (Scan::Sum, a) => add(a.unwrap_or_default(), v),
                (_, None) => v,
                (Scan::Min, Some(a)) => {
                    if v < a {
                        v
                    } else {
                        a
                    }
                }
                (_, Some(a)) => {
                    if v > a {
                        v
                    } else {
                        a
                    }
                }
            };
            acc[g] = Some(next);
            Some(next)
        })
        .collect()
}

/// One chunk's partial aggregation: per group, the partial columns of each aggregation.
pub(crate) fn partial(spec: &GroupSpec, df: &DataFrame) -> PolarsResult<DataFrame> {
    if let Some(c) = spec.nunique_column() {
        let mut value = df.column(c)?.clone();
        value.rename(GroupSpec::partial_name(0, Part::Count).into());
        let mut cols: Vec<Column> = spec.keys.iter().map(|k| df.column(k).cloned()).collect::<PolarsResult<_>>()?;
        cols.push(value);
        let rows = DataFrame::new(df.height(), cols)?;
        // Rows of mostly distinct pairs (each order's suppliers, say) go on as they are:
        // the combine finds the distinct ones anyway, and hashing here would not shrink
        // them. A sample of the first rows decides.
        let sample = distinct_rows(&rows.slice(0, NUNIQUE_SAMPLE), &spec.keys)?.height();
        if rows.height() > NUNIQUE_SAMPLE && sample * 10 > NUNIQUE_SAMPLE * 9 {
            return drop_missing(&rows, &spec.keys);
        }
        return distinct_rows(&rows, &spec.keys);
    }
    let mut steps = Vec::new();
    for (i, (col, agg)) in spec.aggs.iter().enumerate() {
        for &p in agg.partials() {
            let rule = match p {
                Part::Sum => Rule::Sum,
                Part::Count => Rule::Count,
                Part::Min => Rule::Min,
                Part::Max => Rule::Max,
                Part::M2 => Rule::M2,
                Part::First => Rule::First,
                Part::Last => Rule::Last,
                Part::Size => Rule::Size,
            };
            steps.push(Step { col: col.clone(), out: GroupSpec::partial_name(i, p), rule });
        }
    }
    aggregate(df, &spec.keys, &steps)
}

/// Partials of the same groups (from several chunks, in row order) combined into one
/// partial each.
pub(crate) fn combine(spec: &GroupSpec, frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let df = concat(frames)?;
    if spec.nunique_column().is_some() {
        return distinct_rows(&df, &spec.keys);
    }
    let mut steps = Vec::new();
    for (i, (_, agg)) in spec.aggs.iter().enumerate() {
        for &p in agg.partials() {
            let name = GroupSpec::partial_name(i, p);
            let rule = match p {
                Part::Sum | Part::Count | Part::Size => Rule::Sum,
                Part::Min => Rule::Min,
                Part::Max => Rule::Max,
                Part::First => Rule::First,
                Part::Last => Rule::Last,
                Part::M2 => Rule::MergeM2 {
                    count: GroupSpec::partial_name(i, Part::Count),
                    sum: GroupSpec::partial_name(i, Part::Sum),
                },
            };
            steps.push(Step { col: name.clone(), out: name, rule });
        }
    }
    aggregate(&df, &spec.keys, &steps)
}

/// Partials of the same groups combined and finished (a group-by's last step): as
/// [`combine`] then [`finish`], but a `nunique` group-by's pairs are counted by sorting
/// when they pack into integers ([`crate::hashagg::distinct_counts`]).
pub(crate) fn combine_finish(spec: &GroupSpec, frames: Vec<DataFrame>, sort: bool) -> PolarsResult<DataFrame> {
    if spec.nunique_column().is_some() && !spec.keys.is_empty() {
        let df = drop_missing(&concat(frames)?, &spec.keys)?;
        let part = GroupSpec::partial_name(0, Part::Count);
        if let Some((first, counts)) = crate::hashagg::distinct_counts(&df, &spec.keys, &part)? {
            let names: Vec<&str> = spec.keys.iter().map(String::as_str).collect();
            let mut out = df.select(names)?.take(&IdxCa::from_vec(PlSmallStr::EMPTY, first))?;
            out.with_column(Column::new(spec.names[0].as_str().into(), counts))?;
            // Packed integer and time keys come out in key order; string codes do not.
            let strings = out.columns()[..spec.keys.len()].iter().any(|c| c.dtype() == &DataType::String);
            return if sort && strings {
                out.sort(spec.keys.iter().map(|k| k.as_str()), SortMultipleOptions::new().with_multithreaded(false))
            } else {
                Ok(out)
            };
        }
        return finish(spec, &distinct_rows(&df, &spec.keys)?, sort);
    }
    finish(spec, &combine(spec, frames)?, sort)
}

/// The final columns from combined partials, sorted by key (pandas' `sort=True`) when
/// `sort` (a shuffle's reducers leave that to whoever gathers their partitions).
pub(crate) fn finish(spec: &GroupSpec, df: &DataFrame, sort: bool) -> PolarsResult<DataFrame> {
    if spec.nunique_column().is_some() {
        let step = Step { col: GroupSpec::partial_name(0, Part::Count), out: spec.names[0].clone(), rule: Rule::Count };
        let mut out = aggregate(df, &spec.keys, &[step])?;
        let name = spec.names[0].as_str();
        let n = out.column(name)?.cast(&DataType::Int64)?;
        out.with_column(n)?;
        return if sort && !spec.keys.is_empty() {
            out.sort(spec.keys.iter().map(|k| k.as_str()), SortMultipleOptions::new().with_multithreaded(false))
        } else {
            Ok(out)
        };
    }
    let mut cols: Vec<Column> = spec.keys.iter().map(|k| df.column(k).cloned()).collect::<PolarsResult<_>>()?;
    for (i, ((_, agg), name)) in spec.aggs.iter().zip(&spec.names).enumerate() {
        let part = |p: Part| df.column(&GroupSpec::partial_name(i, p)).map(|c| c.as_materialized_series().clone());
        let mut s = match agg {
            Agg::Mean => {
                let sum = part(Part::Sum)?.cast(&DataType::Float64)?;
                let count = part(Part::Count)?.cast(&DataType::Float64)?;
                (&sum / &count)?
            }
            Agg::Std | Agg::Var => {
                let count = part(Part::Count)?.cast(&DataType::Float64)?;
                let m2 = part(Part::M2)?;
                let var: Float64Chunked = m2
                    .f64()?
                    .iter()
                    .zip(count.f64()?.iter())
                    .map(|(m, n)| match (m, n) {
                        (Some(m), Some(n)) if n >= 2.0 => Some(m / (n - 1.0)),
                        _ => None,
                    })
                    .collect();
                if *agg == Agg::Std { var.apply_values(f64::sqrt).into_series() } else { var.into_series() }
            }
            // pandas counts, and sums integers and bools, in int64.
            // (A nunique group-by finished above; agg_named never mixes it with others.)
            Agg::Count | Agg::NUnique => part(Part::Count)?.cast(&DataType::Int64)?,
            Agg::Size => part(Part::Size)?.cast(&DataType::Int64)?,
            Agg::Sum => {
                let s = part(Part::Sum)?;
                if s.dtype().is_integer() || s.dtype() == &DataType::Boolean { s.cast(&DataType::Int64)? } else { s }
            }
            Agg::Min => part(Part::Min)?,
            Agg::Max => part(Part::Max)?,
            Agg::First => part(Part::First)?,
            Agg::Last => part(Part::Last)?,
        };
        s.rename(name.as_str().into());
        cols.push(s.into_column());
    }
    let out = DataFrame::new(df.height(), cols)?;
    if !sort || spec.keys.is_empty() {
        return Ok(out);
    }
    out.sort(spec.keys.iter().map(|k| k.as_str()), SortMultipleOptions::new().with_multithreaded(false))
}

/// splitmix64: mixes one key value into a row's hash.
fn mix(h: u64, v: u64) -> u64 {
    let mut z = h ^ v.wrapping_add(0x9E37_79B9_7F4A_7C15).wrapping_add(h << 6).wrapping_add(h >> 2);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mixes column `c` into each row's hash. The same value hashes alike in every
/// process, whatever chunk it is in.
fn hash_into(c: &Column, h: &mut [u64]) -> PolarsResult<()> {
    const NULL: u64 = 0x5bd1_e995_1234_5678;
    let s = c.as_materialized_series();
    // Dates and times hash as their physical integers.
    let s = &*s.to_physical_repr();
    let dt = s.dtype().clone();
    if dt.is_integer() || dt == DataType::Boolean {
        let s = s.cast(&DataType::Int64)?;
        for (x, v) in h.iter_mut().zip(s.i64()?.iter()) {
            *x = mix(*x, v.map_or(NULL, |v| v as u64));
        }
    } else if dt.is_float() {
        let s = s.cast(&DataType::Float64)?;
        for (x, v) in h.iter_mut().zip(s.f64()?.iter()) {
            // -0.0 and 0.0 are one key, as are all NaNs.
            let bits = v.map_or(NULL, |v| {
                if v == 0.0 {
                    0
                } else if v.is_nan() {
                    NULL ^ 1
                } else {
                    v.to_bits()
                }
            });
            *x = mix(*x, bits);
        }
    } else if dt == DataType::String {
        for (x, v) in h.iter_mut().zip(s.str()?.iter()) {
            // FNV-1a of the bytes.
            let b = v.map_or(NULL, |v| {
                v.bytes().fold(0xcbf2_9ce4_8422_2325u64, |a, b| (a ^ b as u64).wrapping_mul(0x100_0000_01b3))
            });
            *x = mix(*x, b);
        }
    } else {
        polars_bail!(ComputeError: "group-by keys of dtype {dt} cannot be shuffled (numbers, bools, strings, dates and times can)");
    }
    Ok(())
}

/// The rows of `df` split into `parts` frames by the hash of the key columns.
pub(crate) fn hash_split(keys: &[String], df: &DataFrame, parts: usize) -> PolarsResult<Vec<DataFrame>> {
    let mut h = vec![0u64; df.height()];
    for k in keys {
        hash_into(df.column(k)?, &mut h)?;
    }
    let parts = parts.max(1);
    split_rows(df, parts, h.iter().map(|x| (x % parts as u64) as usize))
}

/// The rows of `df` in `parts` frames, row `r` going to the `r`-th part of `which`, each
/// in row order: one counting pass and one gather, the parts being slices of it.
fn split_rows(df: &DataFrame, parts: usize, which: impl Iterator<Item = usize>) -> PolarsResult<Vec<DataFrame>> {
    let which: Vec<u32> = which.map(|p| p as u32).collect();
    let (perm, start) = crate::order::group_rows(&which, parts);
    let grouped = df.take(&IdxCa::from_vec(PlSmallStr::EMPTY, perm))?;
    Ok(start.windows(2).map(|w| grouped.slice(w[0] as i64, w[1] - w[0])).collect())
}

/// Up to `n` rows of the first sort key, evenly spaced (the sample a sort's partition
/// bounds are chosen from).
pub(crate) fn sample(spec: &SortSpec, df: &DataFrame, n: usize) -> PolarsResult<DataFrame> {
    let h = df.height();
    let k = n.min(h);
    let idx: Vec<IdxSize> = (0..k).map(|j| (j * h / k.max(1)) as IdxSize).collect();
    df.select([spec.by[0].as_str()])?.take(&IdxCa::from_vec(PlSmallStr::EMPTY, idx))
}

/// `parts - 1` bounds on the first key from the gathered samples: a one-column frame
/// named `b`, ascending, without nulls.
pub(crate) fn bounds(spec: &SortSpec, samples: Vec<DataFrame>, parts: usize) -> PolarsResult<DataFrame> {
    let s = concat(samples)?;
    let key = spec.by[0].as_str();
    let s = drop_missing(&s, &[key.to_string()])?;
    let s = s.sort([key], SortMultipleOptions::new().with_multithreaded(false))?;
    let n = s.height();
    let idx: Vec<IdxSize> =
        if n == 0 { Vec::new() } else { (1..parts).map(|p| (p * n / parts).min(n - 1) as IdxSize).collect() };
    let mut b = s.take(&IdxCa::from_vec(PlSmallStr::EMPTY, idx))?;
    b.rename(key, "b".into())?;
    Ok(b)
}

/// Which of `bounds.len() + 1` ranges each row's string key falls in (ascending order
/// of ranges: every key of range `p` sorts before every key of range `p + 1`); missing
/// values go to the last range, as pandas puts them last. Numbers take `order`'s keys.
fn string_ranges(key: &Series, bounds: &Series, descending: bool) -> PolarsResult<Vec<usize>> {
    let nb = bounds.len();
    let place = |p: usize| if descending { nb - p } else { p };
    let b: Vec<&str> = bounds.str()?.iter().flatten().collect();
    Ok(key.str()?.iter().map(|v| v.map_or(nb, |v| place(b.partition_point(|&x| x <= v)))).collect())
}

/// The rows of `df` split into `bounds.height() + 1` ranges of the first sort key, each
/// in row order.
pub(crate) fn range_split(spec: &SortSpec, df: &DataFrame, bounds: &DataFrame) -> PolarsResult<Vec<DataFrame>> {
    let key = df.column(&spec.by[0])?.as_materialized_series();
    let b = bounds.column("b")?.as_materialized_series();
    let parts = b.len() + 1;
    if key.dtype() == &DataType::String {
        return split_rows(df, parts, string_ranges(key, b, spec.descending[0])?.into_iter());
    }
    let which = crate::order::keys(key)?.ranges(&crate::order::keys(b)?.keys, spec.descending[0]);
    split_rows(df, parts, which.into_iter().map(|p| p as usize))
}

/// The pieces of one range, sorted (stably, missing values last: NaN in a float key is
/// made null first, since polars orders NaN above every number and pandas puts it last
/// either way).
pub(crate) fn sort_range(spec: &SortSpec, pieces: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut df = concat(pieces)?;
    if spec.by.iter().all(|k| df.column(k).is_ok_and(|c| crate::order::orderable(c.dtype()))) {
        // Numbers: a stable sort by each key from the last (lexicographic), then one
        // gather of every column. NaN stays NaN, sorted with the nulls.
        df.rechunk_mut();
        let mut perm: Vec<IdxSize> = (0..df.height() as IdxSize).collect();
        for (k, &desc) in spec.by.iter().zip(&spec.descending).rev() {
            perm = crate::order::keys(df.column(k)?.as_materialized_series())?.sort(&perm, desc);
        }
        return df.take(&IdxCa::from_vec(PlSmallStr::EMPTY, perm));
    }
    for k in &spec.by {
        let c = df.column(k)?;
        if c.dtype().is_float() {
            let s = crate::eval::nan_to_null(c.as_materialized_series().clone())?;
            df.with_column(s.into_column())?;
        }
    }
    df.sort(
        spec.by.iter().map(|k| k.as_str()),
        SortMultipleOptions::new()
            .with_order_descending_multi(spec.descending.clone())
            .with_nulls_last(true)
            .with_maintain_order(true)
            .with_multithreaded(false),
    )
}
