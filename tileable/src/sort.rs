//! Sample sort (parallel sorting by regular sampling), for every library: each chunk
//! gives a sample, tiling waits for the samples and picks the bounds of the ranges, each
//! chunk is split at the bounds into one piece per range, and each range's pieces are
//! merged into one sorted chunk. Equal keys fall in one range, so a range can be
//! deduplicated or counted on its own.
//!
//! What a chunk, a sample and a bound are, and the tasks that make them, are the
//! library's ([`SampleSort`]); this module only lays out the graph and waits.

use crate::graph::Hints;
use crate::run::{Cx, TileResult, Tiling};
use crate::task::Task;

/// A library's side of a sample sort.
pub trait SampleSort {
    /// The library's task type.
    type Task: Task;
    /// What a sample task returns.
    type Sample: ares::Value + 'static;
    /// Where the ranges start, as the split tasks need them.
    type Bounds;
    /// The library's error.
    type Error: From<ares::Error>;

    /// A task reading one chunk (its first node) and returning its sample.
    fn sample(&self) -> Self::Task;
    /// The bounds of the ranges from every chunk's sample, and how many ranges (at least
    /// one) that makes.
    fn bounds(&self, samples: Vec<Self::Sample>, chunks: usize) -> Result<(Self::Bounds, usize), Self::Error>;
    /// A task reading chunk `chunk` (all its nodes) and returning `objects` pieces:
    /// range r's pieces are r, r + ranges, … (each merge reads only its own, so they are
    /// freed as the merges finish).
    fn split(&self, bounds: &Self::Bounds, ranges: usize, chunk: usize) -> (Self::Task, u32);
    /// A task reading every split and merging the pieces of range `range`.
    fn merge(&self, range: usize, ranges: usize) -> Self::Task;
    /// A task merging whole chunks (all their nodes) into one, for a single range.
    fn merge_all(&self) -> Self::Task;
}

/// The sorted chunks (one node per range, in order) of the chunks `inputs` (each a list
/// of nodes: the keys first, then whatever travels with them). `key` and `variant` name
/// this sort's state in `cx` between tiling steps; `bytes` is the input's size.
pub fn sample_sort<S: SampleSort>(
    cx: &mut Cx<'_>,
    key: usize,
    variant: u64,
    inputs: &[Vec<usize>],
    bytes: u64,
    depth: u32,
    s: &S,
) -> TileResult<Vec<usize>, S::Error> {
    let samples = match cx.take_state::<Vec<usize>>(key, variant) {
        Some(v) => v,
        None => inputs
            .iter()
            .map(|nodes| {
                let p = cx.add(s.sample(), vec![nodes[0]], Hints::new(depth, 64));
                // Held until its value is read below.
                cx.graph_mut().hold(p);
                p
            })
            .collect(),
    };
    let mut pending = false;
    for &n in &samples {
        match cx.value::<S::Error>(n) {
            Ok(_) => {}
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending {
        cx.put_state(key, variant, samples);
        return Err(Tiling::Pending);
    }
    let mut got = Vec::with_capacity(samples.len());
    for &n in &samples {
        let obj = cx.value::<S::Error>(n)?;
        got.push(ares::get(&obj.get::<S::Sample>()).map_err(|e| Tiling::Failed(S::Error::from(e)))?);
        cx.graph_mut().release(n);
    }
    let (bounds, ranges) = s.bounds(got, inputs.len()).map_err(Tiling::Failed)?;
    if ranges < 2 {
        let all: Vec<usize> = inputs.iter().flatten().copied().collect();
        return Ok(vec![cx.add(s.merge_all(), all, Hints::new(depth, bytes).level(1))]);
    }
    let splits: Vec<usize> = inputs
        .iter()
        .enumerate()
        .map(|(i, nodes)| {
            let (task, objects) = s.split(&bounds, ranges, i);
            cx.add(task, nodes.clone(), Hints::new(depth, bytes / inputs.len().max(1) as u64).parts(objects))
        })
        .collect();
    Ok((0..ranges)
        .map(|r| {
            // Merge r reads its own range of each split: parts r, r + ranges, … (a
            // library may follow the values with other pieces, as positions).
            let hints = Hints::new(depth, bytes / ranges as u64).level(1).reads(r as u32, ranges as u32);
            cx.add(s.merge(r, ranges), splits.clone(), hints)
        })
        .collect())
}
