//! Tiling of sorts and `describe`, whose later tasks depend on what earlier ones found:
//! a sort's partition bounds come from each chunk's sample, `describe`'s exact
//! percentiles from each chunk's sketch. Tiling waits for those tasks, in the same graph.

use std::collections::BTreeMap;

use ares_tileable::{Cx, Obj, Tiling};
use polars::prelude::{Column, IntoColumn, NamedFrom, Series};

use super::{Chunks, STATE, Tiled, key, probe, runtime, state_slot, take_value, through, tile_materialized};
use crate::chunk::FrameChunk;
use crate::describe::{self, Picked, Sketch};
use crate::error::FrameError;
use crate::frame::DataFrame;
use crate::kernels;
use crate::spec::SortSpec;
use crate::tasks::FrameTask;

/// Results of the tasks `nodes`, once every one has finished (`None` before: tiling
/// waits for those that have not).
fn values<T: ares::Value + 'static>(cx: &mut Cx<'_>, nodes: &[usize]) -> Tiled<Option<Vec<T>>> {
    let mut pending = false;
    for &n in nodes {
        match cx.value::<FrameError>(n) {
            Ok(_) => {}
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(nodes.len());
    for &n in nodes {
        out.push(take_value::<T>(cx, n)?.expect("finished"));
    }
    Ok(Some(out))
}

/// A frame sort as the engine's sample sort: samples of the first key, bounds as a
/// one-frame chunk, splits and merges of frame chunks.
struct FrameSort<'a>(&'a SortSpec);

impl ares_tileable::SampleSort for FrameSort<'_> {
    type Task = FrameTask;
    type Sample = FrameChunk;
    type Bounds = FrameChunk;
    type Error = FrameError;

    fn sample(&self) -> FrameTask {
        FrameTask::Sample(self.0.clone())
    }

    fn bounds(&self, samples: Vec<FrameChunk>, chunks: usize) -> Result<(FrameChunk, usize), FrameError> {
        let frames =
            samples.iter().map(|s| crate::chunk::decode(&s.ipc)).collect::<polars::prelude::PolarsResult<Vec<_>>>()?;
        let mut bounds = kernels::bounds(self.0, frames, chunks)?;
        let ranges = bounds.height() + 1;
        Ok((FrameChunk::encode(&mut bounds)?, ranges))
    }

    fn split(&self, bounds: &FrameChunk, ranges: usize, _chunk: usize) -> (FrameTask, u32) {
        (FrameTask::Split(self.0.clone(), bounds.clone(), ranges as u32), ranges as u32)
    }

    fn merge(&self, range: usize, _ranges: usize) -> FrameTask {
        FrameTask::Merge(self.0.clone(), range)
    }

    fn merge_all(&self) -> FrameTask {
        FrameTask::MergeAll(self.0.clone())
    }
}

/// Sample sort (the engine's): bounds from each chunk's sample of the first key, each
/// chunk split into ranges, each range's pieces concatenated and sorted.
/// Only the columns its consumer reads and the keys are sorted.
pub(super) fn sort(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    input: &DataFrame,
    spec: &SortSpec,
    needed: Option<&[String]>,
    depth: u32,
) -> Tiled<Chunks> {
    let (cols, pre) = through(input, needed, &spec.by);
    let c = tile_materialized(cx, input, cols.as_deref())?;
    let inputs: Vec<Vec<usize>> = c.nodes.iter().map(|&n| vec![n]).collect();
    let slot = state_slot(needed);
    let nodes = ares_tileable::sample_sort(cx, key(df), slot, &inputs, c.bytes, depth, &FrameSort(spec))?;
    Ok(Chunks { sources: None, nodes, pre, bytes: c.bytes })
}

/// Where `describe` stands between its passes.
enum Describe {
    /// Sketch tasks, one per chunk.
    Sketching(Vec<usize>),
    /// The sketches, the ranks found so far, and pick tasks for the others.
    Picking { sketches: Vec<Vec<Sketch>>, found: Found, picks: Vec<usize> },
}

/// The ranks each column needs: those the sketches pinned down, and a bracket for each
/// other one.
struct Found {
    values: Vec<BTreeMap<u64, f64>>,
    brackets: Vec<(String, Vec<(f64, f64)>)>,
    /// `(column, rank, lo, hi)`, in bracket order.
    wanted: Vec<(usize, u64, f64, f64)>,
}

/// `describe` of `columns` (see `crate::describe`): moments and sketches from every
/// chunk, then, for the ranks the percentiles read that the sketches did not pin down,
/// what each chunk holds of their brackets; the result is one chunk put from here.
pub(super) fn describe(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    input: &DataFrame,
    columns: &[String],
    percentiles: &[f64],
) -> Tiled<Chunks> {
    let c = tile_materialized(cx, input, Some(columns))?;
    let depth = cx.depth(df);
    let state = match cx.take_state::<Describe>(key(df), STATE) {
        Some(s) => s,
        None => {
            let points = describe::sketch_points(c.nodes.len());
            let task = || FrameTask::DescribeSketch(columns.to_vec(), points);
            Describe::Sketching(c.nodes.iter().map(|&r| probe(cx, task(), vec![r], depth)).collect())
        }
    };
    let (sketches, found, picked) = match state {
        Describe::Sketching(nodes) => {
            let Some(sketches) = values::<Vec<Sketch>>(cx, &nodes)? else {
                cx.put_state(key(df), STATE, Describe::Sketching(nodes));
                return Err(Tiling::Pending);
            };
            let found = brackets(&sketches, columns, percentiles);
            if found.brackets.is_empty() {
                (sketches, found, Vec::new())
            } else {
                let task = || FrameTask::DescribePick(found.brackets.clone());
                let picks: Vec<usize> = c.nodes.iter().map(|&r| probe(cx, task(), vec![r], depth)).collect();
                // Registers them as what tiling waits for.
                let none = values::<Vec<Vec<Picked>>>(cx, &picks)?;
                debug_assert!(none.is_none(), "tasks just added have not run");
                cx.put_state(key(df), STATE, Describe::Picking { sketches, found, picks });
                return Err(Tiling::Pending);
            }
        }
        Describe::Picking { sketches, found, picks } => {
            let Some(picked) = values::<Vec<Vec<Picked>>>(cx, &picks)? else {
                cx.put_state(key(df), STATE, Describe::Picking { sketches, found, picks });
                return Err(Tiling::Pending);
            };
            (sketches, found, picked)
        }
    };
    let mut out = summary(&sketches, found, &picked, columns, percentiles)?;
    let chunk = FrameChunk::encode(&mut out).map_err(FrameError::from)?;
    let r = ares::put(chunk).map_err(runtime)?;
    Ok(Chunks { sources: None, nodes: vec![cx.ready(Obj::new(r), 0)], pre: None, bytes: 0 })
}

/// The ranks each column's percentiles read, found from the sketches where they pin
/// them down, else bracketed.
fn brackets(sketches: &[Vec<Sketch>], columns: &[String], percentiles: &[f64]) -> Found {
    let of = |c: usize| sketches.iter().map(|s| &s[c]).collect::<Vec<&Sketch>>();
    let mut values: Vec<BTreeMap<u64, f64>> = vec![BTreeMap::new(); columns.len()];
    let mut brackets: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut wanted: Vec<(usize, u64, f64, f64)> = Vec::new();
    for (c, name) in columns.iter().enumerate() {
        let found = describe::Brackets::new(of(c));
        let n: u64 = of(c).iter().map(|s| s.count).sum();
        let mut bs = Vec::new();
        for &q in percentiles.iter().filter(|_| n > 0) {
            let (lo, hi, _) = describe::percentile_ranks(q, n);
            for r in [lo, hi] {
                if values[c].contains_key(&r) || wanted.iter().any(|w| w.0 == c && w.1 == r) {
                    continue;
                }
                let (blo, bhi) = found.bracket(r).expect("a rank below the count");
                if blo == bhi {
                    values[c].insert(r, blo);
                } else {
                    wanted.push((c, r, blo, bhi));
                    bs.push((blo, bhi));
                }
            }
        }
        if !bs.is_empty() {
            brackets.push((name.clone(), bs));
        }
    }
    Found { values, brackets, wanted }
}

/// `describe`'s frame: a `statistic` column, then one column of statistics per input
/// column.
fn summary(
    sketches: &[Vec<Sketch>],
    mut found: Found,
    picked: &[Vec<Vec<Picked>>],
    columns: &[String],
    percentiles: &[f64],
) -> Result<polars::prelude::DataFrame, FrameError> {
    // `brackets` lists the columns with brackets in order, each's in `wanted` order.
    let mut slot: Vec<(usize, usize)> = Vec::new();
    for (b, (_, bs)) in found.brackets.iter().enumerate() {
        slot.extend((0..bs.len()).map(|i| (b, i)));
    }
    for (&(c, r, lo, hi), &(b, i)) in found.wanted.iter().zip(&slot) {
        let parts: Vec<&Picked> = picked.iter().map(|p| &p[b][i]).collect();
        let v = describe::select(&parts, lo, hi, r).ok_or_else(|| {
            FrameError::Invalid(format!("describe: rank {r} of {:?} was not in its bracket", columns[c]))
        })?;
        found.values[c].insert(r, v);
    }
    let of = |c: usize| sketches.iter().map(|s| &s[c]).collect::<Vec<&Sketch>>();
    let names = describe::percentile_names(percentiles);
    let mut stats: Vec<String> = ["count", "mean", "std", "min"].iter().map(|s| s.to_string()).collect();
    stats.extend(names);
    stats.push("max".into());
    let mut cols = vec![Column::new("statistic".into(), stats)];
    for (c, name) in columns.iter().enumerate() {
        let per = of(c);
        let (n, mean, m2) = describe::moments(&per);
        let present = || per.iter().filter(|s| s.count > 0);
        let min = present().map(|s| s.values[0]).fold(f64::NAN, f64::min);
        let max = present().map(|s| s.values[s.values.len() - 1]).fold(f64::NAN, f64::max);
        let nan_unless = |ok: bool, v: f64| if ok { v } else { f64::NAN };
        let mut col = vec![n as f64, nan_unless(n > 0, mean), nan_unless(n > 1, (m2 / (n as f64 - 1.0)).sqrt()), min];
        for &q in percentiles {
            col.push(if n == 0 {
                f64::NAN
            } else {
                let (lo, hi, t) = describe::percentile_ranks(q, n);
                describe::lerp(found.values[c][&lo], found.values[c][&hi], t)
            });
        }
        col.push(max);
        cols.push(Series::new(name.as_str().into(), col).into_column());
    }
    Ok(polars::prelude::DataFrame::new_infer_height(cols)?)
}
