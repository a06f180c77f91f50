//! What a chunk task is told to do: the aggregation, sort, map, top-rows and join
//! descriptions sent with it.

use crate::expr::Program;

/// An aggregation of one column per group, or over a whole frame (pandas' names;
/// missing values, null or NaN, are skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Agg {
    /// `sum` (0 for a group of missing values only, as pandas).
    Sum,
    /// `count`: the non-missing values.
    Count,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `mean`.
    Mean,
    /// `std`, with pandas' default `ddof=1` (missing for fewer than two values).
    Std,
    /// `var`, `ddof=1`.
    Var,
    /// `first`: the first non-missing value in row order.
    First,
    /// `last`: the last non-missing value.
    Last,
    /// `size`: the rows of the group, missing values included.
    Size,
    /// `nunique`: the distinct non-missing values. Only alone in a group-by (see
    /// [`GroupSpec::nunique_column`]): its partials are rows, not one per group.
    NUnique,
}

impl Agg {
    /// pandas' name.
    pub fn name(self) -> &'static str {
        match self {
            Agg::Sum => "sum",
            Agg::Count => "count",
            Agg::Min => "min",
            Agg::Max => "max",
            Agg::Mean => "mean",
            Agg::Std => "std",
            Agg::Var => "var",
            Agg::First => "first",
            Agg::Last => "last",
            Agg::Size => "size",
            Agg::NUnique => "nunique",
        }
    }

    /// Whether it needs numbers (or booleans) as input.
    pub(crate) fn numeric(self) -> bool {
        matches!(self, Agg::Sum | Agg::Mean | Agg::Std | Agg::Var)
    }

    /// The partial results a chunk keeps for it.
    pub(crate) fn partials(self) -> &'static [Part] {
        match self {
            Agg::Sum => &[Part::Sum],
            Agg::Count => &[Part::Count],
            Agg::Min => &[Part::Min],
            Agg::Max => &[Part::Max],
            Agg::Mean => &[Part::Sum, Part::Count],
            Agg::Std | Agg::Var => &[Part::Count, Part::Sum, Part::M2],
            Agg::First => &[Part::First],
            Agg::Last => &[Part::Last],
            Agg::Size => &[Part::Size],
            Agg::NUnique => &[Part::Count],
        }
    }
}

/// One partial result of an aggregation, kept per group by each chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Sum,
    Count,
    Min,
    Max,
    /// Sum of squared deviations from the group's mean (Chan et al. combine them).
    M2,
    First,
    Last,
    Size,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Sum => "sum",
            Part::Count => "count",
            Part::Min => "min",
            Part::Max => "max",
            Part::M2 => "m2",
            Part::First => "first",
            Part::Last => "last",
            Part::Size => "size",
        }
    }
}

/// How a group-by combines its chunks' partial results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Choose from the first chunk's number of groups (Mars' `auto`).
    Auto,
    /// A join that sends the small side whole to every chunk of the other.
    Broadcast,
    /// Partials combined in a tree into one chunk: few groups.
    Tree,
    /// Partials hash-partitioned by key, one reducer per partition: many groups.
    Shuffle,
}

/// A group-by aggregation.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct GroupSpec {
    /// Key columns.
    pub keys: Vec<String>,
    /// `(column, aggregation)`, in output order.
    pub aggs: Vec<(String, Agg)>,
    /// The output column of each aggregation.
    pub names: Vec<String>,
}

impl GroupSpec {
    /// The partial column of aggregation `i`'s part `p`.
    pub(crate) fn partial_name(i: usize, p: Part) -> String {
        format!("__ares_{i}_{}", p.name())
    }

    /// The column of a `nunique` group-by (its one aggregation): each chunk's partial
    /// is then its distinct present (keys, value) rows, and a combine their distinct
    /// union, so one shuffle by the keys finishes it.
    pub(crate) fn nunique_column(&self) -> Option<&str> {
        match self.aggs.as_slice() {
            [(c, Agg::NUnique)] => Some(c),
            _ => None,
        }
    }
}

/// A sort by one or more columns.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SortSpec {
    /// Sort keys, most significant first.
    pub by: Vec<String>,
    /// Descending, per key.
    pub descending: Vec<bool>,
}

/// The per-chunk steps of a fused map, in order, with the expressions they evaluate.
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct MapSpec {
    /// Every step's expressions, flattened.
    pub(crate) program: Program,
    /// The steps.
    pub(crate) steps: Vec<MapStep>,
}

impl MapSpec {
    /// Only the columns `cols`, in that order.
    pub(crate) fn select(cols: Vec<String>) -> MapSpec {
        MapSpec { program: Program::default(), steps: vec![MapStep::Select(cols)] }
    }

    /// The input column whose values the output column `name` holds unchanged, through
    /// renames and copies (`assign(b=col("a"))`); `None` when a step computes it.
    pub(crate) fn source_of(&self, name: &str) -> Option<String> {
        let mut name = name.to_string();
        for step in self.steps.iter().rev() {
            match step {
                MapStep::Assign(n, at) if *n == name => match self.program.instrs.get(*at as usize)? {
                    crate::expr::Instr::Col(src) => name = src.clone(),
                    _ => return None,
                },
                MapStep::Rename(pairs) => {
                    if let Some((from, _)) = pairs.iter().find(|(_, to)| *to == name) {
                        name = from.clone();
                    }
                }
                _ => {}
            }
        }
        Some(name)
    }

    /// This map with its lazy frames in place, from their computed rows `frames[k]`
    /// (of dtype `dtypes[k]`, as the expressions were built): a scalar as a constant,
    /// a set (distinct values already, at most `max_set` bytes of them) put in the store.
    pub(crate) fn with_values(
        &self,
        frames: &mut [polars::prelude::DataFrame],
        dtypes: &[polars::prelude::DataType],
        optional: &[bool],
        max_set: usize,
    ) -> crate::error::Result<MapSpec> {
        use crate::expr::Instr;
        let mut out = self.clone();
        let mut stored: Vec<Option<([u8; 32], crate::expr::SetRef)>> = vec![None; frames.len()];
        for ins in &mut out.program.instrs {
            match ins {
                Instr::Value(k) => {
                    *ins = crate::expr::constant_of(&frames[*k as usize], &dtypes[*k as usize])?;
                }
                Instr::IsIn(a, k) => {
                    let (key, r) = match &stored[*k as usize] {
                        Some(done) => done.clone(),
                        None => {
                            let distinct = &mut frames[*k as usize];
                            let chunk = crate::chunk::FrameChunk::encode(distinct)?;
                            if chunk.ipc.len() > max_set && optional[*k as usize] {
                                *ins = Instr::Lit(crate::expr::Scalar::Bool(true));
                                continue;
                            }
                            if chunk.ipc.len() > max_set {
                                return Err(crate::error::FrameError::Invalid(format!(
                                    "isin with {} distinct values ({} bytes) would send them to every task (at \
                                     most {max_set} bytes): join the frames with merge instead",
                                    distinct.height(),
                                    chunk.ipc.len()
                                )));
                            }
                            let key = *blake3::hash(&chunk.ipc).as_bytes();
                            let r = crate::expr::SetRef(ares::put(chunk).map_err(crate::error::FrameError::Runtime)?);
                            stored[*k as usize] = Some((key, r.clone()));
                            (key, r)
                        }
                    };
                    *ins = Instr::IsInSet(*a, key, r);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// These steps trimmed to compute only the output columns `out` (in that order):
    /// a selection keeps only those of its columns that are used later, an assignment
    /// nobody reads is dropped, and a rename keeps only the pairs whose new name is used
    /// (or whose old name another pair takes). So a consumer reading a few columns makes
    /// the map, and through [`MapSpec::needed`] its input, read only what those need.
    pub(crate) fn pruned(&self, out: &[String]) -> MapSpec {
        let mut out = out.to_vec();
        let mut seen = std::collections::HashSet::new();
        out.retain(|c| seen.insert(c.clone()));
        let mut need: Vec<String> = out.clone();
        let add = |need: &mut Vec<String>, c: &str| {
            if !need.iter().any(|n| n == c) {
                need.push(c.to_string());
            }
        };
        let mut steps = Vec::with_capacity(self.steps.len() + 1);
        for step in self.steps.iter().rev() {
            match step {
                MapStep::Select(cols) => {
                    let kept: Vec<String> = cols.iter().filter(|c| need.contains(c)).cloned().collect();
                    need = kept.clone();
                    steps.push(MapStep::Select(kept));
                }
                MapStep::Filter(at) => {
                    self.program.columns(*at, &mut need);
                    steps.push(step.clone());
                }
                MapStep::Assign(name, at) => {
                    if need.contains(name) {
                        need.retain(|n| n != name);
                        self.program.columns(*at, &mut need);
                        steps.push(step.clone());
                    }
                }
                MapStep::Rename(pairs) => {
                    let targets: Vec<&String> =
                        pairs.iter().filter(|(_, to)| need.contains(to)).map(|(_, to)| to).collect();
                    let kept: Vec<(String, String)> = pairs
                        .iter()
                        .filter(|(from, to)| targets.contains(&to) || targets.contains(&from))
                        .cloned()
                        .collect();
                    for (from, to) in kept.iter().rev() {
                        need.retain(|n| n != to);
                        add(&mut need, from);
                    }
                    if !kept.is_empty() {
                        steps.push(MapStep::Rename(kept));
                    }
                }
            }
        }
        steps.reverse();
        // Exactly `out`, whatever else the steps read (parts of a concat must agree).
        if !matches!(steps.last(), Some(MapStep::Select(c)) if *c == out) {
            steps.push(MapStep::Select(out));
        }
        MapSpec { program: self.program.clone(), steps }
    }

    /// The input columns the steps need for `out` (their output columns that are used):
    /// walked back from the last step, each filter and assignment adds what its
    /// expression reads, and a selection or rename needs every column it names.
    pub(crate) fn needed(&self, out: &[String]) -> Vec<String> {
        let mut need: Vec<String> = out.to_vec();
        let add = |need: &mut Vec<String>, c: &str| {
            if !need.iter().any(|n| n == c) {
                need.push(c.to_string());
            }
        };
        for step in self.steps.iter().rev() {
            match step {
                MapStep::Select(cols) => {
                    need.clear();
                    need.extend(cols.iter().cloned());
                }
                MapStep::Filter(at) => self.program.columns(*at, &mut need),
                MapStep::Assign(name, at) => {
                    need.retain(|n| n != name);
                    self.program.columns(*at, &mut need);
                }
                MapStep::Rename(pairs) => {
                    for (from, to) in pairs.iter().rev() {
                        need.retain(|n| n != to);
                        add(&mut need, from);
                    }
                }
            }
        }
        need
    }
}

/// One step of a map.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum MapStep {
    /// Keep these columns, in this order.
    Select(Vec<String>),
    /// Keep the rows where the expression at this index is true.
    Filter(u32),
    /// Set (replace in place, or append) a column to the expression at this index.
    Assign(String, u32),
    /// Rename columns `(from, to)`.
    Rename(Vec<(String, String)>),
}

/// A running aggregation within groups, in row order (pandas' `groupby(...).cumsum()`
/// and the like).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Scan {
    /// `cumsum`: int64 for integers and booleans, float64 for floats.
    Sum,
    /// `cummin`, in the column's dtype.
    Min,
    /// `cummax`, likewise.
    Max,
    /// `cumcount`: the rows of the group before this one, int64.
    Count,
    /// `shift(periods)` for `periods` ≥ 1: the value of the group's row that many rows
    /// before (missing where there is none), in the column's dtype.
    Shift(u32),
    /// `shift(-periods)` for `periods` ≥ 1: the value of the group's row that many rows
    /// after (missing where there is none), in the column's dtype. Chunks read what the
    /// chunks after them hold: the chain runs from the last chunk back.
    Lead(u32),
    /// `rolling(window, min_periods).agg()`: over each row and the group's rows before it,
    /// `window` rows in all, float64; missing where fewer than `min_periods` of them have
    /// a value (missing values and infinities are skipped, as pandas' are; a window of
    /// no value sums to 0).
    Rolling(u32, u32, Roll),
}

/// How a rank numbers tied values (pandas' `rank(method=)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// The mean of the ranks the ties span.
    Average,
    /// The least of them.
    Min,
    /// The greatest.
    Max,
    /// In row order.
    First,
    /// Ranks of distinct values, without gaps.
    Dense,
}

/// What a rolling window computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Roll {
    Sum,
    Mean,
    Min,
    Max,
}

impl Scan {
    /// The aggregation whose partials carry the running value across chunks.
    pub(crate) fn agg(self) -> Agg {
        match self {
            Scan::Sum => Agg::Sum,
            Scan::Min => Agg::Min,
            Scan::Max => Agg::Max,
            // A shift or a window carries rows, not partials (see `kernels::group_tail`).
            Scan::Count | Scan::Shift(_) | Scan::Lead(_) | Scan::Rolling(..) => Agg::Size,
        }
    }

    /// The rows of each group a chunk needs from the chunks before it (after it, for a
    /// lead), for a shift or a window (which carry rows rather than partials); `None` for
    /// the others.
    pub(crate) fn tail(self) -> Option<u32> {
        match self {
            Scan::Shift(n) | Scan::Lead(n) => Some(n),
            Scan::Rolling(window, ..) => Some(window.saturating_sub(1)),
            _ => None,
        }
    }
}

/// A group scan: keys and the one aggregation (in `group`), its kind, and the column the
/// result is appended as.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ScanSpec {
    pub(crate) group: GroupSpec,
    pub(crate) kind: Scan,
    pub(crate) name: String,
}

/// The first or last rows of a frame, or its top rows by some columns.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct TopSpec {
    /// Rows kept.
    pub(crate) n: u64,
    /// The last rows, not the first.
    pub(crate) tail: bool,
    /// Sorted by this first (`nlargest`/`nsmallest`), stably.
    pub(crate) order: Option<SortSpec>,
    /// The order is a `sort_values` the rows were taken from (`head`/`tail` of it):
    /// rows with missing keys are kept, last, as the sort puts them; `nlargest` drops
    /// them.
    pub(crate) sorted: bool,
}

/// One byte range of a CSV file to read, and the columns to parse.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CsvTask {
    /// The file (an absolute path).
    pub(crate) path: String,
    /// Bytes `[start, end)`: the lines that start there.
    pub(crate) range: (u64, u64),
    /// The field separator.
    pub(crate) separator: u8,
    /// Every column of the file, in order, with the dtype it is parsed as.
    pub(crate) schema: Vec<(String, crate::expr::Dtype)>,
    /// The columns parsed (indices into `schema`, ascending).
    pub(crate) projection: Vec<u32>,
}

/// One row group of a Parquet file to read, and the columns to read.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ParquetTask {
    /// The file (an absolute path).
    pub(crate) path: String,
    /// The row group's first row and its rows.
    pub(crate) rows: (u64, u64),
    /// The columns read.
    pub(crate) columns: Vec<String>,
}

/// A chunk task that only reads a file (its fused map applied): the chunk a consumer
/// may read itself, in its own task, rather than from the store.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Source {
    Parquet(ParquetTask, Option<MapSpec>),
    Csv(CsvTask, Option<MapSpec>),
}

/// How a merge keeps rows without a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum How {
    /// Only matched rows.
    Inner,
    /// Every left row.
    Left,
    /// Every right row.
    Right,
    /// Every row of both sides.
    Outer,
}

/// A merge on equal key columns.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct JoinSpec {
    /// The key columns, named alike on both sides.
    pub(crate) on: Vec<String>,
    /// Which unmatched rows are kept.
    pub(crate) how: How,
    /// Non-key columns on both sides, renamed `name_x` (left) and `name_y` (right).
    pub(crate) both: Vec<String>,
    /// The left's chunks and row order are kept (a left join, the right side sent to
    /// every chunk of the left whatever its size): the result's columns can be set on
    /// the left frame, as a lookup's are.
    pub(crate) keep_left: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;

    #[test]
    fn a_set_too_large_is_refused_unless_the_engine_added_it() {
        use crate::expr::Instr;
        use polars::prelude::{DataFrame, DataType, NamedFrom, Series};
        let mut spec = MapSpec::default();
        spec.program.instrs = vec![Instr::Col("a".into()), Instr::IsIn(0, 0)];
        spec.steps.push(MapStep::Filter(1));
        let set = || vec![DataFrame::new(3, vec![Series::new("a".into(), [1i64, 2, 3]).into()]).unwrap()];
        let err = spec.with_values(&mut set(), &[DataType::Int64], &[false], 0).unwrap_err();
        assert!(err.to_string().contains("merge instead"), "{err}");
        // The engine's own set (a group-by cut by a merge's other side) is dropped.
        let kept = spec.with_values(&mut set(), &[DataType::Int64], &[true], 0).unwrap();
        assert_eq!(kept.program.instrs[1], Instr::Lit(crate::expr::Scalar::Bool(true)));
    }

    #[test]
    fn a_map_needs_what_its_steps_read_and_name() {
        let mut spec = MapSpec::default();
        let f = spec.program.push(&col("a").gt(1), &mut Vec::new());
        spec.steps.push(MapStep::Filter(f));
        let g = spec.program.push(&(col("b") * 2), &mut Vec::new());
        spec.steps.push(MapStep::Assign("g".into(), g));
        spec.steps.push(MapStep::Rename(vec![("c".into(), "d".into())]));
        // Output "g" and "d": "g" comes from "b", "d" was "c", and the filter reads "a".
        let mut need = spec.needed(&["g".into(), "d".into()]);
        need.sort();
        assert_eq!(need, ["a", "b", "c"]);
        spec.steps.push(MapStep::Select(vec!["g".into(), "e".into()]));
        let mut need = spec.needed(&["g".into()]);
        need.sort();
        assert_eq!(need, ["a", "b", "c", "e"], "a selection needs every column it names");
    }

    #[test]
    fn a_pruned_map_computes_and_reads_only_what_is_used() {
        let mut spec = MapSpec::default();
        spec.steps.push(MapStep::Select(vec!["a".into(), "b".into(), "c".into(), "x".into()]));
        let f = spec.program.push(&col("a").gt(1), &mut Vec::new());
        spec.steps.push(MapStep::Filter(f));
        let g = spec.program.push(&(col("c") * 2), &mut Vec::new());
        spec.steps.push(MapStep::Assign("g".into(), g));
        spec.steps.push(MapStep::Rename(vec![("b".into(), "e".into()), ("x".into(), "y".into())]));
        let p = spec.pruned(&["e".into(), "e".into()]);
        // "g" is not used, nor "y": their assignment and rename go, and so does "c".
        assert_eq!(
            p.steps,
            [
                MapStep::Select(vec!["a".into(), "b".into()]),
                MapStep::Filter(f),
                MapStep::Rename(vec![("b".into(), "e".into())]),
                MapStep::Select(vec!["e".into()]),
            ]
        );
        let mut need = p.needed(&["e".into()]);
        need.sort();
        assert_eq!(need, ["a", "b"]);
        // A pair whose old name another pair takes stays (no two columns share a name).
        let mut swap = MapSpec::default();
        swap.steps.push(MapStep::Rename(vec![("a".into(), "b".into()), ("b".into(), "a".into())]));
        assert_eq!(swap.pruned(&["a".into()]).steps[0], swap.steps[0]);
    }
}
